package sandbox

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
)

// The helper is a binary of its own, ollie-sandbox, installed next to
// ollie: it links this package and nothing of the backends, the web
// front-end or the tree, so it starts in a fraction of the time and
// memory ollie would take (ollie re-executing itself is still the helper
// when ollie-sandbox is missing, and in tests). Two binaries can be out
// of step: ollie rebuilt and an old ollie-sandbox left beside it would
// confine every stage with the old rules. So the daemon tells the helper
// its build on every start, and a helper of another build refuses to
// run anything.
//
// A build is named by what decides how the helper confines: the source
// of this package, the modules it links and the Go release. Both
// binaries hold the same source text when they come from the same tree.

// HelperName is the sandbox helper's file name, next to the ollie
// executable.
const HelperName = "ollie-sandbox"

// buildFlag, followed by the daemon's Build, is the helper's first
// argument.
const buildFlag = "-build="

//go:embed *.go
var source embed.FS

// linkedModules are the modules this package links besides the standard
// library. TestLinkedModulesListed keeps the list true.
var linkedModules = []string{
	"github.com/landlock-lsm/go-landlock",
	"golang.org/x/sys",
	"kernel.org/pub/linux/libs/security/libcap/psx",
}

// Build names the helper's build: a short hash of this package's source
// (its test files included, which changes nothing but costs nothing) and
// the Go release, then, after a dot, one of the versions of
// linkedModules. Test binaries do not record the versions of the modules
// they link; their builds have nothing after the dot, and sameBuild
// compares that part only when both sides know it.
var Build = sync.OnceValue(func() string {
	src := sha256.New()
	src.Write([]byte(runtime.Version() + "\n"))
	names, err := fs.Glob(source, "*.go")
	if err != nil {
		panic(err) // a constant pattern
	}
	for _, n := range names { // Glob sorts them
		b, err := source.ReadFile(n)
		if err != nil {
			panic(err) // embedded: cannot fail
		}
		src.Write([]byte(path.Base(n) + "\n"))
		src.Write(b)
	}
	id := hex.EncodeToString(src.Sum(nil)[:8]) + "."
	if bi, ok := debug.ReadBuildInfo(); ok && len(bi.Deps) > 0 {
		mods := sha256.New()
		for _, m := range bi.Deps {
			if !slices.Contains(linkedModules, m.Path) {
				continue
			}
			if r := m.Replace; r != nil {
				m = &debug.Module{Path: m.Path + " => " + r.Path, Version: r.Version, Sum: r.Sum}
			}
			mods.Write([]byte(m.Path + "@" + m.Version + " " + m.Sum + "\n"))
		}
		id += hex.EncodeToString(mods.Sum(nil)[:4])
	}
	return id
})

// sameBuild says whether builds a and b are the same, as far as both
// know.
func sameBuild(a, b string) bool {
	srcA, modsA, _ := strings.Cut(a, ".")
	srcB, modsB, _ := strings.Cut(b, ".")
	return srcA == srcB && (modsA == "" || modsB == "" || modsA == modsB)
}

// HelperFor is the sandbox helper of the ollie executable exe:
// ollie-sandbox in the same directory, or exe itself when there is none.
func HelperFor(exe string) string {
	h := filepath.Join(filepath.Dir(exe), HelperName)
	if st, err := os.Stat(h); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return h
	}
	return exe
}

// checkBuild is the helper's first step: the daemon's build, the first
// of its arguments, must be the helper's own. It returns the arguments
// after it, and why the helper must refuse to start anything.
func checkBuild(args []string) ([]string, error) {
	if len(args) == 0 || !strings.HasPrefix(args[0], buildFlag) {
		return args, fmt.Errorf("usage: %s %s %sBUILD (-serve | -- SPEC PATH ARGV0 [ARG...]): only ollie starts it", HelperName, HelperCommand, buildFlag)
	}
	if theirs := strings.TrimPrefix(args[0], buildFlag); !sameBuild(theirs, Build()) {
		exe, _ := os.Executable()
		return args[1:], fmt.Errorf("the sandbox helper %s (build %s) is not from the build of the ollie that started it (build %s): build both again, e.g. go build -o %s ./cmd/ollie ./cmd/%s",
			exe, Build(), theirs, filepath.Dir(exe), HelperName)
	}
	return args[1:], nil
}
