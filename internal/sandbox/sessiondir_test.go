package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The resolver of one check gives what filepath.EvalSymlinks gives, for
// links to directories and files, relative links that climb, chains,
// dangling links, missing components and files used as directories.
func TestResolverMatchesEvalSymlinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0700); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("real/home/.config/gh")
	mk("keys/ssh")
	mk("proj/a")
	os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0600)
	ln(filepath.Join(root, "real/home"), "home")           // absolute link to a directory
	ln("../../keys/ssh", "real/home/.ssh")                 // relative link that climbs
	ln("home", "alias")                                    // a chain: alias -> home -> real/home
	ln("nowhere", "real/home/.aws")                        // dangling
	ln(filepath.Join(root, "file"), "real/home/.netrc")    // link to a file
	ln(filepath.Join(root, "alias/.config"), "proj/a/cfg") // a link through a chain
	paths := []string{
		"home", "home/.ssh", "alias/.ssh", "alias/.config/gh", "home/.aws", "home/.aws/x",
		"home/.netrc", "file/x", "missing", "missing/deeper", "proj/a/cfg/gh", "proj/a/../a",
		"real/home/.config", "alias",
	}
	r := newResolver()
	for _, p := range paths {
		p = filepath.Join(root, p)
		want, err := filepath.EvalSymlinks(p)
		got, ok := r.resolve(filepath.Clean(p))
		if ok != (err == nil) || (ok && got != want) || (!ok && got != filepath.Clean(p)) {
			t.Errorf("%s: resolver gives %q %v, EvalSymlinks %q %v", p, got, ok, want, err)
		}
		if r.path(p) != resolve(p) {
			t.Errorf("%s: path %q, resolve %q", p, r.path(p), resolve(p))
		}
	}
}

// A secret reached through a link is still protected: a session may not
// work in the directory a link in the home points at, nor in one that
// contains it.
func TestSessionDirRefusesLinkedSecrets(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	keys := filepath.Join(root, "store", "keys")
	for _, d := range []string{home, keys, filepath.Join(root, "proj")} {
		if err := os.MkdirAll(d, 0700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(keys, filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{keys, filepath.Join(root, "store"), home} {
		if err := CheckSessionDir(dir, home, nil); err == nil {
			t.Errorf("cwd %s accepted with ~/.ssh -> %s", dir, keys)
		}
	}
	if err := CheckSessionDir(filepath.Join(root, "proj"), home, nil); err != nil {
		t.Errorf("a project directory refused: %v", err)
	}
	// A link made after one check counts at the next.
	if err := os.Symlink(filepath.Join(root, "proj"), filepath.Join(home, ".aws")); err != nil {
		t.Fatal(err)
	}
	if err := CheckSessionDir(filepath.Join(root, "proj"), home, nil); err == nil || !strings.Contains(err.Error(), "protected") {
		t.Errorf("cwd behind a new ~/.aws link: %v", err)
	}
}

// TestSessionDirCacheFollowsChanges: the real paths of the secrets are
// kept between checks while nothing changes in the directories they were
// found through; a link or a rename in any of them, deep or shallow,
// counts at the very next check.
func TestSessionDirCacheFollowsChanges(t *testing.T) {
	home, proj := homeAndProject(t)
	check := func(step string, refused bool) {
		t.Helper()
		err := CheckSessionDir(proj, home, nil)
		if refused != (err != nil) {
			t.Fatalf("%s: cwd %s: %v, want refused %v", step, proj, err, refused)
		}
	}
	check("at first", false)
	if protectedCache.snap == nil {
		t.Fatal("no link anywhere, yet the protected paths were not kept")
	}
	check("again, from what was kept", false)
	link := func(to, at string) {
		t.Helper()
		if err := os.Symlink(to, at); err != nil {
			t.Fatal(err)
		}
	}
	link(proj, filepath.Join(home, ".aws"))
	check("~/.aws made a link to the project", true)
	os.Remove(filepath.Join(home, ".aws"))
	check("the link removed", false)

	// ~/.config replaced by a link into the project, which has a gh:
	// ~/.config/gh is then inside it.
	if err := os.Rename(filepath.Join(home, ".config"), filepath.Join(home, ".config.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(proj, "cfg", "gh"), 0700); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(proj, "cfg"), filepath.Join(home, ".config"))
	check("~/.config a link into the project", true)
	os.Remove(filepath.Join(home, ".config"))
	if err := os.Rename(filepath.Join(home, ".config.old"), filepath.Join(home, ".config")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(proj, "cfg"))
	check("~/.config back", false)

	// Deeper: a link made inside ~/.config.
	link(proj, filepath.Join(home, ".config", "gh"))
	check("~/.config/gh a link to the project", true)
}

// TestWarmSessionDirCheck: the warming keeps what the first check would
// have resolved, and a link planted after it still counts at the next
// check.
func TestWarmSessionDirCheck(t *testing.T) {
	home, proj := homeAndProject(t)
	private := []string{filepath.Join(home, ".config", "ollie")}
	WarmSessionDirCheck(home, private)
	protectedCache.mu.Lock()
	kept := protectedCache.snap != nil && protectedCache.key == home+"\x00"+private[0]
	protectedCache.mu.Unlock()
	if !kept {
		t.Fatal("the warming kept nothing for the first check")
	}
	if err := CheckSessionDir(proj, home, private); err != nil {
		t.Fatalf("after the warming: %v", err)
	}
	if err := os.Symlink(proj, filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	if err := CheckSessionDir(proj, home, private); err == nil {
		t.Fatal("~/.ssh made a link to the project after the warming, and the cwd was accepted")
	}
}

// homeAndProject makes a home with a .config and a project beside it, by
// their real paths.
func homeAndProject(t *testing.T) (home, proj string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, proj = filepath.Join(root, "home"), filepath.Join(root, "proj")
	for _, d := range []string{filepath.Join(home, ".config"), proj} {
		if err := os.MkdirAll(d, 0700); err != nil {
			t.Fatal(err)
		}
	}
	return home, proj
}
