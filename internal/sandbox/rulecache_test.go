package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
)

// A ruleset is built once for a policy whose paths name the same files,
// and again as soon as one of them names another file or appears.
func TestRulesetReusedOnlyForSameFiles(t *testing.T) {
	if ABI() <= 0 {
		skipUnlessCI(t, "no landlock")
	}
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	os.Mkdir(a, 0o700)
	pol := &Policy{Name: "t", RODirs: []string{a, b}}
	builds := 0
	build := func() (int, uint32, error) {
		builds++
		return landlockConfig(pol).NewRulesetFD(pol.rules()...)
	}
	get := func() {
		t.Helper()
		fd, _, err := reuseRuleset(landlockConfig(pol), pol, build)
		if err != nil || fd < 0 {
			t.Fatalf("ruleset: %d %v", fd, err)
		}
		os.NewFile(uintptr(fd), "ruleset").Close()
	}
	get()
	get()
	if builds != 1 {
		t.Fatalf("%d builds for the same files, want 1", builds)
	}
	os.Mkdir(b, 0o700) // a path that was missing exists
	get()
	if builds != 2 {
		t.Fatalf("%d builds after %s appeared, want 2", builds, b)
	}
	os.Rename(a, filepath.Join(root, "moved")) // a path names another directory
	os.Mkdir(a, 0o700)
	get()
	if builds != 3 {
		t.Fatalf("%d builds after %s was replaced, want 3", builds, a)
	}
	get()
	if builds != 3 {
		t.Fatalf("%d builds, want the third reused", builds)
	}
	rulesets.mu.RLock()
	cr := rulesets.m[rulesetKey(landlockConfig(pol), pol)]
	rulesets.mu.RUnlock()
	if cr == nil || cr.snap == nil {
		t.Fatal("no snapshot kept: every reuse stats every path")
	}

	// A path through a link, to a directory whose own directory is not
	// watched: replacing the link's target there makes no event where
	// the watch looks, and must still build anew.
	other := t.TempDir()
	target, link := filepath.Join(other, "t"), filepath.Join(root, "link")
	os.Mkdir(target, 0o700)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	pol.RODirs = append(pol.RODirs, link)
	get()
	get()
	if builds != 4 {
		t.Fatalf("%d builds with the link added, want 4", builds)
	}
	os.Rename(target, filepath.Join(other, "gone"))
	os.Mkdir(target, 0o700)
	get()
	if builds != 5 {
		t.Fatalf("%d builds after the link's target was replaced, want 5", builds)
	}
}

// The attack: the session directory a stage may write is moved away (to
// where the stage must not write) and a new one made in its place. A
// ruleset reused on the strength of the path alone would still grant the
// moved directory; the next call's stage must be refused there.
func TestMovedWorkspaceIsNotWritable(t *testing.T) {
	if ABI() <= 0 {
		skipUnlessCI(t, "no landlock")
	}
	exe, _ := os.Executable()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cwd, tmp, moved := filepath.Join(home, "p"), filepath.Join(root, "data", "tmp"), filepath.Join(home, "elsewhere")
	for _, d := range []string{cwd, tmp} {
		os.MkdirAll(d, 0o755)
	}
	run := func(script string) string {
		t.Helper()
		pr := prepare(t, config.BuiltinProfiles()["workspace"], Paths{Home: home, Cwd: cwd, Tmp: tmp})
		defer pr.Close()
		out, err := runHelper(t, pr, exe, script)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := run("echo x > " + cwd + "/a && echo wrote"); out != "wrote\n" {
		t.Fatalf("stage could not write its workspace: %q", out)
	}
	if err := os.Rename(cwd, moved); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(cwd, 0o755)
	out := run("(echo x > " + moved + "/b) 2>/dev/null && echo wrote; echo x > " + cwd + "/c && echo new")
	if strings.Contains(out, "wrote") {
		t.Errorf("a stage wrote into the moved workspace %s: %q", moved, out)
	}
	if !strings.Contains(out, "new") {
		t.Errorf("a stage could not write the new workspace: %q", out)
	}
}
