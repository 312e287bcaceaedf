package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The modules the helper's build is named by are the ones this package
// links.
func TestLinkedModulesListed(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		skipUnlessCI(t, "go list: "+err.Error())
	}
	var mods []string
	for _, m := range strings.Fields(string(out)) {
		if m != "ollie.dev/ollie" && !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	want := slices.Sorted(slices.Values(linkedModules))
	if !slices.Equal(mods, want) {
		t.Errorf("the sandbox links %v; linkedModules lists %v", mods, want)
	}
}

func TestSameBuild(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"0a1b.c2d3", "0a1b.c2d3", true},
		{"0a1b.c2d3", "0a1b.", true}, // a test binary knows no module versions
		{"0a1b.c2d3", "0a1b.e4f5", false},
		{"0a1b.c2d3", "9a1b.c2d3", false},
		{"0a1b.", "9a1b.", false},
		{"", "0a1b.", false},
	} {
		if sameBuild(c.a, c.b) != c.same || sameBuild(c.b, c.a) != c.same {
			t.Errorf("sameBuild(%q, %q) = %v", c.a, c.b, !c.same)
		}
	}
}

// A helper told another build refuses, both forms of it, and says why
// in words a person can act on; one told its own build starts.
func TestHelperRefusesAnotherBuild(t *testing.T) {
	exe := helperExe(t)
	// The one-shot helper: exit 125, the reason on the status pipe.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(spec{Mode: Elevated})
	cmd := exec.Command(exe, HelperCommand, buildFlag+"0123456789abcdef01234567", "--", string(spec), "/bin/true", "true")
	cmd.ExtraFiles = []*os.File{nil, w} // the status descriptor is 4
	err = cmd.Run()
	w.Close()
	msg := make([]byte, 4096)
	n, _ := r.Read(msg)
	r.Close()
	if cmd.ProcessState.ExitCode() != 125 || !strings.Contains(string(msg[:n]), "is not from the build of the ollie that started it") ||
		!strings.Contains(string(msg[:n]), "build 0123456789abcdef01234567") {
		t.Errorf("one-shot helper of another build: %v, status %q", err, msg[:n])
	}
	// Without a build at all.
	out, err := exec.Command(exe, HelperCommand, "--", string(spec), "/bin/true", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "only ollie starts it") {
		t.Errorf("helper without a build: %v %q", err, out)
	}

	// The resident helper: its ready reply carries the refusal.
	if rep := startBare(t, exe, "another"); rep.Kind != "ready" || !strings.Contains(rep.Err, "(build another)") {
		t.Errorf("resident helper of another build: %+v", rep)
	}
}

// startBare starts exe as a resident helper told build, with no stage
// cgroups (a helper that exits empties and removes the ones it was given,
// which are this test process's), and returns its first reply, after
// which the helper is gone.
func startBare(t *testing.T, exe, build string) reply {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ours"), os.NewFile(uintptr(pair[1]), "theirs")
	defer ours.Close()
	cmd := exec.Command(exe, HelperCommand, buildFlag+build, serveFlag)
	cmd.ExtraFiles = []*os.File{theirs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	rep, _, err := receive(int(ours.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	ours.Close()
	cmd.Wait()
	return rep
}

// The resident helper must end every confined thread, the self-check's
// first. ollie-sandbox runs it from main, not from an init as ollie did,
// and its goroutine could then land on the main thread, which Go wedges
// instead of ending: the check waited its 10 s and failed, in one start
// out of five. (This test binary, also run from a main, does not show
// it, so the real ollie-sandbox is built; it is of this build.)
func TestResidentHelperStartsEveryTime(t *testing.T) {
	if ABI() <= 0 {
		skipUnlessCI(t, "no Landlock")
	}
	if _, err := exec.LookPath("go"); err != nil {
		skipUnlessCI(t, "go: "+err.Error())
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir+"/", "ollie.dev/ollie/cmd/"+HelperName).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	exe := filepath.Join(dir, HelperName)
	for i := range 30 {
		if rep := startBare(t, exe, Build()); rep.Kind != "ready" || rep.Err != "" {
			t.Fatalf("start %d: %+v", i, rep)
		}
	}
}
