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
	r := resolver{}
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
