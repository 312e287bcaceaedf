package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		os.Exit(HelperMain(os.Args[2:]))
	}
	if len(os.Args) == 4 && os.Args[1] == daemonCommand {
		os.Exit(daemonMain(os.Args[2], os.Args[3]))
	}
	if len(os.Args) > 1 && os.Args[1] == canaryCommand {
		os.Exit(canaryMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func TestChooseMode(t *testing.T) {
	if m, err := chooseMode(7, false); m != Landlock || err != nil {
		t.Errorf("abi 7: %v %v", m, err)
	}
	if m, err := chooseMode(0, true); m != Unsandboxed || err != nil {
		t.Errorf("no landlock, allowed: %v %v", m, err)
	}
	_, err := chooseMode(0, false)
	if !errs.Is(err, errs.Unsupported) || !strings.Contains(err.Error(), "allow_unsandboxed") {
		t.Errorf("no landlock, not allowed: %v", err)
	}
}

func TestCarve(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/secret", "a/b/c", "a/d", "e"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "a/b/file"), nil, 0o644)
	os.WriteFile(filepath.Join(root, "a/b/hidden-file"), nil, 0o644)
	os.Symlink(filepath.Join(root, "a/b/secret"), filepath.Join(root, "a/link"))
	hidden := []string{filepath.Join(root, "a/b/hidden-file"), filepath.Join(root, "a/b/secret")}
	dirs, files, err := carve(root, hidden)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(ps []string) []string {
		var out []string
		for _, p := range ps {
			r, _ := filepath.Rel(root, p)
			out = append(out, r)
		}
		slices.Sort(out)
		return out
	}
	if got, want := rel(dirs), []string{"a/b/c", "a/d", "e"}; !slices.Equal(got, want) {
		t.Errorf("dirs %v, want %v", got, want)
	}
	if got, want := rel(files), []string{"a/b/file"}; !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
}

func TestPolicyHidesPrivateDirs(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cwd, tmp, priv := filepath.Join(home, "p"), filepath.Join(root, "data", "tmp"), filepath.Join(root, "data")
	for _, d := range []string{cwd, tmp, filepath.Join(home, ".ssh")} {
		os.MkdirAll(d, 0o755)
	}
	prof := config.BuiltinProfiles()["workspace"]
	pol, err := New("workspace", prof, Paths{Home: home, Cwd: cwd, Tmp: tmp, Private: []string{priv}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(pol.RODirs, pol.ROFiles...) {
		for _, bad := range []string{home, priv, "/home", "/root", "/tmp", "/dev", "/etc/shadow"} {
			if within(p, bad) && p != cwd {
				t.Errorf("%s readable, within %s", p, bad)
			}
		}
		if strings.HasPrefix(p, "/proc/") && p[6] >= '0' && p[6] <= '9' {
			t.Errorf("pid directory %s readable", p)
		}
	}
	if !slices.Contains(pol.RWDirs, cwd) || !slices.Contains(pol.RWDirs, tmp) {
		t.Errorf("rw %v lacks cwd or tmp", pol.RWDirs)
	}
	if !slices.Contains(pol.RODirs, "/usr") {
		t.Errorf("the system is not readable: %v", pol.RODirs)
	}
}

func TestBaseEnv(t *testing.T) {
	got := BaseEnv([]string{"PATH=/x", "LANG=C", "LC_ALL=C", "OPENAI_API_KEY=k", "AWS_SECRET_ACCESS_KEY=k", "TERM=xterm", "SSH_AUTH_SOCK=/s"})
	if want := []string{"LANG=C", "LC_ALL=C", "TERM=xterm"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := MergeEnv([]string{"A=1", "B=2"}, "B=3", "C=4"); !slices.Equal(got, []string{"A=1", "B=3", "C=4"}) {
		t.Errorf("merge: %v", got)
	}
}

// TestUnsandboxedStillFiltered runs the helper in the mode used on a
// kernel without Landlock: seccomp, limits and capabilities still apply.
func TestUnsandboxedStillFiltered(t *testing.T) {
	exe, _ := os.Executable()
	pol := &Policy{Name: "t", DenyFamilies: []int{1}, Limits: config.Limits{Files: 64}}
	pr := &Prepared{Policy: pol, Mode: Unsandboxed}
	out, err := runHelper(t, pr, exe, `setsid true && echo setsid-ok; ulimit -n;
python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>/dev/null && echo unix-ok; echo end`)
	if err != nil {
		t.Fatal(err)
	}
	if out != "64\nend\n" {
		t.Errorf("output %q", out)
	}
}

func TestHelperReportsExecFailure(t *testing.T) {
	exe, _ := os.Executable()
	pr := &Prepared{Policy: &Policy{}, Mode: Unsandboxed}
	_, err := pr.Start(Cmd{Helper: exe, Path: "/no/such/program", Args: []string{"x"}})
	if !errs.Is(err, errs.NotExist) || !strings.Contains(err.Error(), "/no/such/program") {
		t.Fatalf("got %v", err)
	}
}

func runHelper(t *testing.T, pr *Prepared, exe, script string) (string, error) {
	t.Helper()
	r, w, _ := os.Pipe()
	defer r.Close()
	p, err := pr.Start(Cmd{Helper: exe, Path: "/bin/bash", Args: []string{"bash", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: w, Stderr: os.Stderr})
	w.Close()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if _, err := p.Wait(); err != nil {
		return "", err
	}
	return b.String(), nil
}
