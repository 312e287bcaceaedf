package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
)

func TestProtectedPaths(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j := func(p ...string) string { return filepath.Join(append([]string{root}, p...)...) }
	mk := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(p, s string) {
		mk(filepath.Dir(p))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk(j("repo", ".git", "hooks"))
	mk(j("main", ".git", "worktrees", "wt"))
	put(j("main", ".git", "worktrees", "wt", "commondir"), "../..\n")
	put(j("wt", ".git"), "gitdir: "+j("main", ".git", "worktrees", "wt")+"\n")
	put(j("sub", ".git"), "gitdir: ../repo/.git\n") // relative pointer
	put(j("bogus", ".git"), "not a pointer\n")      // only the file itself
	mk(j("data", "s", "one", "tmp"))                // ollie's data, holding a tmp
	mk(j("plain"))
	for _, tc := range []struct {
		name       string
		rw         []string
		ro, reopen []string
	}{
		{"repo", []string{j("repo")}, []string{j("repo", ".git")}, nil},
		{"no .git", []string{j("plain")}, nil, nil},
		{"worktree, main not writable", []string{j("wt")}, []string{j("wt", ".git")}, nil},
		{"worktree, main writable", []string{j("wt"), j("main")},
			[]string{j("main", ".git"), j("main", ".git", "worktrees", "wt"), j("wt", ".git")}, nil},
		{"relative pointer", []string{j("sub"), j("repo")}, []string{j("repo", ".git"), j("sub", ".git")}, nil},
		{"not a pointer", []string{j("bogus")}, []string{j("bogus", ".git")}, nil},
		{"private inside a root", []string{root, j("data", "s", "one", "tmp")},
			[]string{j("data")}, []string{j("data", "s", "one", "tmp")}}, // only a root's own .git
		{"root is private", []string{j("data")}, []string{j("data")}, nil},
	} {
		ro, reopen := protectedPaths(tc.rw, []string{j("data"), j("elsewhere")})
		if !slices.Equal(ro, tc.ro) || !slices.Equal(reopen, tc.reopen) {
			t.Errorf("%s: got %q reopen %q, want %q reopen %q", tc.name, ro, reopen, tc.ro, tc.reopen)
		}
	}
}

// TestKeptNamespaceRechecked replaces a protected .git between two
// stages of one prepared policy (one key): the namespace kept for the
// first must not serve the second with the new .git writable.
func TestKeptNamespaceRechecked(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	cwd, tmp := filepath.Join(home, "p"), filepath.Join(root, "tmp")
	for _, d := range []string{filepath.Join(cwd, ".git"), tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pr := prepare(t, config.BuiltinProfiles()["workspace"], Paths{Home: home, Cwd: cwd, Tmp: tmp})
	defer pr.Close()
	try := Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "echo TRIED; touch .git/planted && echo ESCAPED || echo denied"}, Dir: cwd}
	for i := range 3 {
		if out, _ := run(t, pr, try); out != "TRIED\ndenied\n" {
			t.Fatalf("round %d: %q", i, out)
		}
		// The user makes .git again, outside: the kept bind is on the old.
		if err := os.RemoveAll(filepath.Join(cwd, ".git")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// A stage whose cwd holds ollie's programs (a project ollie is built
// into) cannot plant a helper beside ollie, nor replace ollie: the daemon
// runs what that directory holds unconfined. It can still run ollie and
// write the rest of its cwd.
func TestProgramsStayReadOnly(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	cwd, tmp := filepath.Join(home, "p"), filepath.Join(root, "tmp")
	bin := filepath.Join(cwd, "bin")
	for _, d := range []string{bin, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "ollie"), []byte("#!/bin/sh\necho ollie ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pr := prepare(t, config.BuiltinProfiles()["workspace"], Paths{Home: home, Cwd: cwd, Tmp: tmp, Programs: []string{bin}})
	defer pr.Close()
	script := `bin/ollie
for f in bin/ollie-sandbox bin/ollie; do
	(echo '#!/bin/sh' > "$f.new" && mv "$f.new" "$f") 2>/dev/null && echo "planted $f" || echo "refused $f"
done
echo x > own && echo "wrote own"`
	out, _ := run(t, pr, Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: cwd})
	if want := "ollie ran\nrefused bin/ollie-sandbox\nrefused bin/ollie\nwrote own\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(bin, "ollie-sandbox")); err == nil {
		t.Fatal("a stage planted ollie-sandbox beside ollie")
	}
}

// TestRefusedWithoutNamespaces runs the test below where the helper can
// make no mount namespace (uid 0 of a user namespace of its own with no
// capabilities, and no further user namespaces allowed): a stage that
// needs protection must be refused, with the reason, not run.
func TestRefusedWithoutNamespaces(t *testing.T) {
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux) is needed: %v", tool, err)
		}
	}
	script := `echo 0 > /proc/sys/user/max_user_namespaces &&
exec setpriv --bounding-set=-all --inh-caps=-all "$0" -test.run '^TestNoNamespaceChild$' -test.count=1 -test.v`
	cmd := exec.Command("unshare", "--user", "--map-root-user", "sh", "-c", script, helperExe(t))
	cmd.Env = append(os.Environ(), "OLLIE_TEST_NO_NS=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNoNamespaceChild") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestNoNamespaceChild(t *testing.T) {
	if os.Getenv("OLLIE_TEST_NO_NS") == "" {
		t.Skip("run by TestRefusedWithoutNamespaces")
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cwd, tmp := filepath.Join(home, "p"), filepath.Join(root, "tmp")
	for _, d := range []string{filepath.Join(cwd, ".git"), tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pr := prepare(t, config.BuiltinProfiles()["workspace"], Paths{Home: home, Cwd: cwd, Tmp: tmp})
	defer pr.Close()
	for _, oneShot := range []bool{false, true} {
		fmt.Println("TRIED")
		_, err := pr.Start(Cmd{Helper: helperExe(t), Path: "/bin/sh", Args: []string{"sh", "-c", "touch .git/planted"},
			Dir: cwd, OneShot: oneShot})
		if err == nil || !strings.Contains(err.Error(), "cannot keep .git and ollie's directories read-only") {
			t.Errorf("one-shot %v: started, or the wrong error: %v", oneShot, err)
		}
		if _, err := os.Stat(filepath.Join(cwd, ".git", "planted")); err == nil {
			t.Fatal("the stage ran with .git writable")
		}
	}
}
