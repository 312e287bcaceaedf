package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/mountinfo"
)

// heldOn counts the temporary directories as the system's, so that
// their paths may be held, and lets go of everything held after the test.
func heldOn(t *testing.T) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(t.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	devs := systemDevs()
	saved := systemDevs
	systemDevs = func() map[uint64]bool {
		m := map[uint64]bool{st.Dev: true}
		for d := range devs {
			m[d] = true
		}
		return m
	}
	t.Cleanup(func() {
		systemDevs = saved
		held.mu.Lock()
		for _, h := range held.m {
			unix.Close(h.fd)
		}
		held.m = nil
		held.mu.Unlock()
	})
}

// testPolicy grants what bash needs, and under root: ro/ read-only, the
// file rofile read-only, rw/ and rw2/ writable, the file rwfile
// writable, and a path that does not exist.
func testPolicy(root string) *Policy {
	sys := []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}
	return &Policy{
		Name:    "t",
		RODirs:  append(sys, filepath.Join(root, "ro"), filepath.Join(root, "missing")),
		ROFiles: []string{filepath.Join(root, "rofile")},
		RWDirs:  []string{filepath.Join(root, "rw"), filepath.Join(root, "rw2")},
		RWFiles: []string{filepath.Join(root, "rwfile"), "/dev/null"},
	}
}

// layOut makes testPolicy's files under root, and one outside them all.
func layOut(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"ro", "rw", "rw2", "out"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ro/f", "rofile", "rwfile", "rw/f", "out/f"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// probe tries each kind of access the rules differ on and says which
// were allowed.
const probe = `R=%s
t() { if eval "$2" >/dev/null 2>&1; then echo "$1:yes"; else echo "$1:no"; fi; }
t ro-read "cat $R/ro/f"
t ro-list "ls $R/ro"
t ro-write "echo y >> $R/ro/f"
t ro-create "echo y > $R/ro/new"
t ro-mkdir "mkdir $R/ro/d"
t rofile-read "cat $R/rofile"
t rofile-write "echo y >> $R/rofile"
t rw-read "cat $R/rw/f"
t rw-write "echo y >> $R/rw/f"
t rw-truncate "truncate -s 0 $R/rw/f"
t rw-create "echo y > $R/rw/new"
t rw-mkdir "mkdir $R/rw/d"
t rw-fifo "mkfifo $R/rw/p"
t rw-symlink "ln -s f $R/rw/l"
t rw-refer "ln $R/rw/new $R/rw2/linked"
t rw-remove "rm $R/rw2/linked"
t rw-rmdir "rmdir $R/rw/d"
t rwfile-write "echo y >> $R/rwfile"
t rwfile-truncate "truncate -s 0 $R/rwfile"
t out-read "cat $R/out/f"
t out-list "ls $R/out"
t out-write "echo y > $R/out/g"
`

// The rulesets built here grant what go-landlock's grant, access by
// access, whether their paths are opened or held.
func TestBuiltRulesetsGrantWhatGoLandlockGrants(t *testing.T) {
	if ABI() < minReferABI {
		skipUnlessCI(t, "no landlock with refer")
	}
	heldOn(t)
	exe, _ := os.Executable()
	outputs := map[string]string{}
	for _, how := range []string{"go-landlock", "opened", "held"} {
		root := t.TempDir()
		layOut(t, root)
		pol := testPolicy(root)
		c := landlockConfig(pol)
		var fd int
		var flags uint32
		var err error
		switch how {
		case "go-landlock":
			fd, flags, err = c.NewRulesetFD(pol.rules()...)
		case "opened":
			fd, flags, err = buildRuleset(c, pol, nil)
			if isHeld(filepath.Join(root, "ro")) {
				t.Fatal("a build held a path")
			}
		case "held":
			holdPaths(allPaths(pol))
			if !isHeld(filepath.Join(root, "ro")) || !isHeld("/usr") || !isHeld(filepath.Join(root, "rwfile")) {
				t.Fatal("the paths are not held")
			}
			ids, _, ok := pathIDs(allPaths(pol), nil)
			if !ok {
				t.Fatal("paths not looked at")
			}
			fd, flags, err = buildRuleset(c, pol, ids)
		}
		if err != nil || fd < 0 {
			t.Fatalf("%s: %d %v", how, fd, err)
		}
		pr := &Prepared{Policy: pol, Mode: Landlock, ruleset: os.NewFile(uintptr(fd), "ruleset"), flags: flags}
		out, err := runHelper(t, pr, exe, strings.ReplaceAll(probe, "%s", root))
		pr.Close()
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		outputs[how] = out
	}
	want := outputs["go-landlock"]
	for _, line := range []string{"ro-read:yes", "ro-write:no", "rofile-write:no", "rw-create:yes", "rw-refer:yes", "rwfile-write:yes", "out-read:no", "out-write:no"} {
		if !strings.Contains(want, line+"\n") {
			t.Errorf("go-landlock's ruleset: no %s in\n%s", line, want)
		}
	}
	for _, how := range []string{"opened", "held"} {
		if outputs[how] != want {
			t.Errorf("built with its paths %s, the ruleset grants\n%s\ngo-landlock's\n%s", how, outputs[how], want)
		}
	}
}

// The attack: a directory a stage may only read is held, then moved to
// where no stage may read and a new one made in its place (as a stage
// that may write above it could do). A ruleset built from the held
// descriptor would grant the moved directory; the next new policy's
// stage must be refused there.
func TestHeldPathReplacedIsNotGranted(t *testing.T) {
	if ABI() < minReferABI {
		skipUnlessCI(t, "no landlock with refer")
	}
	heldOn(t)
	exe, _ := os.Executable()
	root := t.TempDir()
	layOut(t, root)
	if err := os.WriteFile(filepath.Join(root, "ro", "secret"), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := testPolicy(root)
	holdPaths(allPaths(pol))
	was := heldID(filepath.Join(root, "ro"))
	if !was.exists {
		t.Fatal("ro/ not held")
	}
	moved := filepath.Join(root, "out", "ro")
	if err := os.Rename(filepath.Join(root, "ro"), moved); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "ro"), 0o755)
	os.WriteFile(filepath.Join(root, "ro", "f"), []byte("x\n"), 0o644)
	pol.RWDirs = append(pol.RWDirs, t.TempDir()) // another policy: built, not reused
	pr := prepareFrom(t, pol)
	defer pr.Close()
	out, err := runHelper(t, pr, exe, "cat "+moved+"/secret 2>/dev/null && echo read-moved; cat "+root+"/ro/f && echo read-new")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "read-moved") {
		t.Errorf("a stage read the moved directory %s through a held descriptor: %q", moved, out)
	}
	if !strings.Contains(out, "read-new") {
		t.Errorf("a stage could not read the new ro/: %q", out)
	}
	if now := heldID(filepath.Join(root, "ro")); !now.exists || now == was {
		t.Errorf("the held ro/ was not replaced by the new one: %v, was %v", now, was)
	}
}

func isHeld(path string) bool { return heldID(path).exists }

func heldID(path string) fileID {
	held.mu.RLock()
	defer held.mu.RUnlock()
	return held.m[path].id
}

// A held path that is gone is let go at the next build that looks for
// it: its descriptor would keep what it was on.
func TestGoneHeldPathLetGo(t *testing.T) {
	if ABI() < minReferABI {
		skipUnlessCI(t, "no landlock with refer")
	}
	heldOn(t)
	root := t.TempDir()
	layOut(t, root)
	pol := testPolicy(root)
	holdPaths(allPaths(pol))
	if !isHeld(filepath.Join(root, "rofile")) {
		t.Fatal("rofile not held")
	}
	os.Remove(filepath.Join(root, "rofile"))
	pol.RWDirs = append(pol.RWDirs, t.TempDir())
	prepareFrom(t, pol).Close()
	if isHeld(filepath.Join(root, "rofile")) {
		t.Error("a removed file is still held after a build looked for it")
	}
	if !isHeld(filepath.Join(root, "ro")) {
		t.Error("ro/ was let go")
	}
}

func prepareFrom(t *testing.T, pol *Policy) *Prepared {
	t.Helper()
	pr, err := pol.Prepare(false)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// A descriptor on a file system that is not the system's is never held:
// it would keep its mount (a session's tmp/, a removable disk) busy.
func TestOnlySystemPathsHeld(t *testing.T) {
	for _, c := range []struct {
		path string
		want bool
	}{{"/usr", true}, {"/etc", true}, {"/dev/shm", false}} {
		fd, err := unix.Open(c.path, heldOpenFlags, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, ok := holdable(fd)
		unix.Close(fd)
		var a, b unix.Stat_t
		unix.Stat(c.path, &a)
		unix.Stat("/", &b)
		if c.path == "/dev/shm" && a.Dev == b.Dev {
			continue // not a file system of its own here
		}
		if ok != c.want {
			t.Errorf("%s held: %v, want %v", c.path, ok, c.want)
		}
	}
}

// HoldBase looks only at paths on the system's own mounts: not at a
// FUSE mount (the tree's own, served by the daemon) or a tmpfs under
// them, nor at a file system mounted on a directory with a space.
func TestHoldBaseLooksOnlyAtSystemMounts(t *testing.T) {
	ms := []mountinfo.Mount{
		{Point: "/", FSType: "ext4"}, {Point: "/proc", FSType: "proc"}, {Point: "/dev", FSType: "devtmpfs"},
		{Point: "/dev/shm", FSType: "tmpfs"}, {Point: "/home/u/mnt/ollie", FSType: "fuse.ollie"},
		{Point: "/home/u/my disk", FSType: "vfat"},
	}
	got := onSystemMounts([]string{"/usr/bin", "/proc/cpuinfo", "/dev/null", "/dev/shm", "/dev/shm/x",
		"/home/u/mnt/ollie", "/home/u/mnt/ollie/s", "/home/u/mnt/olliex", "/home/u/my disk/a", "/home/u/my"}, ms)
	want := []string{"/usr/bin", "/proc/cpuinfo", "/dev/null", "/home/u/mnt/olliex", "/home/u/my"}
	if !slices.Equal(got, want) {
		t.Errorf("held %v, want %v", got, want)
	}
}

// HoldBase holds the base's directories in the home, but not its files:
// a file a user deletes must give its blocks back.
func TestHoldBaseKeepsNoFileOfTheHome(t *testing.T) {
	if ABI() < minReferABI {
		skipUnlessCI(t, "no landlock with refer")
	}
	heldOn(t)
	home := t.TempDir()
	for _, d := range []string{".ssh", "d"} {
		os.Mkdir(filepath.Join(home, d), 0o700)
	}
	os.WriteFile(filepath.Join(home, "big"), []byte("x"), 0o600)
	HoldBase(config.Profile{System: true, Home: true}, home, nil) // a profile that lets stages read the home
	if !isHeld(filepath.Join(home, "d")) {
		t.Fatalf("the home's directory d/ is not held (the home is carved around .ssh)")
	}
	if isHeld(filepath.Join(home, "big")) {
		t.Error("a file of the home is held")
	}
	if !isHeld("/etc/hosts") && !isHeld("/etc") {
		t.Error("neither /etc nor /etc/hosts held")
	}
}

// HoldBase leaves a look at what it held, for the daemon's first build:
// ids equal to a stat of each, vouched for by inotify.
func TestHoldBaseLeavesALook(t *testing.T) {
	if ABI() < minReferABI {
		skipUnlessCI(t, "no landlock with refer")
	}
	heldOn(t)
	lastLook.Store(nil)
	HoldBase(config.Profile{System: true}, t.TempDir(), nil)
	l := lastLook.Load()
	if l == nil || l.snap == nil {
		t.Fatal("no look left by HoldBase")
	}
	held.mu.RLock()
	defer held.mu.RUnlock()
	if len(held.m) == 0 {
		t.Fatal("nothing held")
	}
	for path := range held.m {
		i, ok := l.at[path]
		if !ok {
			t.Errorf("held %s is not in the look", path)
			continue
		}
		ids, _, _ := pathIDs([]string{path}, nil)
		if l.ids[i] != ids[0] {
			t.Errorf("%s: look %v, stat %v", path, l.ids[i], ids[0])
		}
	}
}
