package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	build := func([]fileID) (int, uint32, error) {
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
	if cr == nil || len(cr.snaps) == 0 {
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

// Calls for the same policy while it is being built (the branches of a
// parallel stage of a new session) wait for that build and share it; a
// build that fails leaves the next call to build again.
func TestOneBuildAtATime(t *testing.T) {
	if ABI() <= 0 {
		skipUnlessCI(t, "no landlock")
	}
	pol := &Policy{Name: "t", RODirs: []string{t.TempDir()}}
	var builds atomic.Int32
	release := make(chan struct{})
	build := func([]fileID) (int, uint32, error) {
		if builds.Add(1) == 1 {
			<-release
		}
		return landlockConfig(pol).NewRulesetFD(pol.rules()...)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fd, _, err := reuseRuleset(landlockConfig(pol), pol, build)
			if err != nil || fd < 0 {
				t.Errorf("ruleset: %d %v", fd, err)
				return
			}
			os.NewFile(uintptr(fd), "ruleset").Close()
		}()
	}
	for builds.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the others reach the wait (not a timing assertion)
	close(release)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Fatalf("%d builds for one policy asked for at once, want 1", n)
	}

	failing := &Policy{Name: "f", RODirs: []string{t.TempDir()}}
	fails := 0
	_, _, err := reuseRuleset(landlockConfig(failing), failing, func([]fileID) (int, uint32, error) {
		fails++
		return -1, 0, os.ErrInvalid
	})
	if err == nil {
		t.Fatal("a failed build reported no error")
	}
	fd, _, err := reuseRuleset(landlockConfig(failing), failing, func([]fileID) (int, uint32, error) {
		fails++
		return landlockConfig(failing).NewRulesetFD(failing.rules()...)
	})
	if err != nil || fd < 0 || fails != 2 {
		t.Fatalf("after a failed build: %d %v, %d builds", fd, err, fails)
	}
	os.NewFile(uintptr(fd), "ruleset").Close()
}

// What the last look found is used for the paths a new policy shares
// with it only while inotify says nothing changed along them: a shared
// directory replaced, or a directory above made a link, is looked at
// again.
func TestLastLookOnlyWhileUnchanged(t *testing.T) {
	lastLook.Store(nil) // this test's first look is the look
	root := t.TempDir()
	a := filepath.Join(root, "a")
	shared, file := filepath.Join(a, "b"), filepath.Join(root, "f")
	for _, d := range []string{shared, filepath.Join(root, "cwd1"), filepath.Join(root, "cwd2"), filepath.Join(root, "cwd3")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(file, nil, 0o600)
	stat := func(path string) fileID {
		t.Helper()
		ids, _, ok := pathIDs([]string{path}, nil)
		if !ok {
			t.Fatalf("stat %s", path)
		}
		return ids[0]
	}
	lookFor := func(cwd string) ([]fileID, bool) {
		t.Helper()
		ids, _, ss, ok := lookAt([]string{shared, file, filepath.Join(root, cwd)})
		if !ok {
			t.Fatal("look failed")
		}
		return ids, len(ss) > 0
	}
	first, vouched := lookFor("cwd1")
	if !vouched || first[0] != stat(shared) || first[1] != stat(file) {
		t.Fatalf("first look: %v, vouched %v", first, vouched)
	}
	// Nothing changed: the same answer, vouched for.
	if again, vouched := lookFor("cwd2"); !vouched || again[0] != first[0] || again[1] != first[1] || again[2] != stat(filepath.Join(root, "cwd2")) {
		t.Fatalf("unchanged: %v, vouched %v", again, vouched)
	}

	// The shared directory replaced by another.
	if err := os.Rename(shared, filepath.Join(a, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	ids, _ := lookFor("cwd3")
	if ids[0] == first[0] || ids[0] != stat(shared) {
		t.Fatalf("replaced %s: looked at as %v, the old one was %v, now %v", shared, ids[0], first[0], stat(shared))
	}

	// A new path reached through a link is not vouched for, while the
	// look holds for the others.
	lookFor("cwd1")
	via := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(root, via); err != nil {
		t.Fatal(err)
	}
	if _, _, ss, ok := lookAt([]string{shared, file, filepath.Join(via, "cwd2")}); !ok || len(ss) > 0 {
		t.Fatalf("a path through the link %s was vouched for (ok %v)", via, ok)
	}

	// A directory above it made a link: nothing can vouch for the paths.
	lookFor("cwd1")
	if err := os.Rename(a, filepath.Join(root, "a2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "a2"), a); err != nil {
		t.Fatal(err)
	}
	if _, vouched := lookFor("cwd2"); vouched {
		t.Fatalf("%s is reached through a link now, and was vouched for", shared)
	}
}

// A ruleset built with the look's help is reused only while the names
// above its own paths are unchanged too: its new path replaced, it is
// built anew although the look still holds.
func TestRulesetOfALookWatchesItsOwnPaths(t *testing.T) {
	if ABI() <= 0 {
		skipUnlessCI(t, "no landlock")
	}
	lastLook.Store(nil)
	root := t.TempDir()
	base, own := filepath.Join(root, "base"), filepath.Join(root, "own")
	os.Mkdir(base, 0o700)
	os.Mkdir(own, 0o700)
	builds := 0
	get := func(pol *Policy) {
		t.Helper()
		fd, _, err := reuseRuleset(landlockConfig(pol), pol, func([]fileID) (int, uint32, error) {
			builds++
			return landlockConfig(pol).NewRulesetFD(pol.rules()...)
		})
		if err != nil || fd < 0 {
			t.Fatalf("ruleset: %d %v", fd, err)
		}
		os.NewFile(uintptr(fd), "ruleset").Close()
	}
	get(&Policy{Name: "t", RODirs: []string{base}}) // the look
	pol := &Policy{Name: "t", RODirs: []string{base, own}}
	get(pol)
	get(pol)
	if builds != 2 {
		t.Fatalf("%d builds, want 2: the second policy's reused", builds)
	}
	if err := os.Rename(own, filepath.Join(root, "away")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(own, 0o700)
	get(pol)
	if builds != 3 {
		t.Fatalf("%d builds after %s was replaced, want 3", builds, own)
	}
}
