package defaults

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A first Install writes every shipped file of the directories, each with
// the bytes shipped, and a manifest naming them all; a second writes
// nothing; an edited copy is kept and a deleted one stays deleted.
func TestInstallWritesAllThenKeepsEdits(t *testing.T) {
	root := t.TempDir()
	dirs := []string{"a", "p", "sk", "t"}
	rep, err := Install(root, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	var shipped []string
	for _, d := range dirs {
		fs.WalkDir(files, d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && filepath.Base(p)[0] != '.' {
				shipped = append(shipped, p)
			}
			return err
		})
	}
	if !slices.Equal(rep.Installed, shipped) || len(shipped) < 10 {
		t.Fatalf("installed %v, shipped %v", rep.Installed, shipped)
	}
	for _, p := range shipped {
		want, _ := files.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %d bytes, %v; want the %d shipped", p, len(got), err, len(want))
		}
		if left, _ := filepath.Glob(filepath.Join(root, p) + ".tmp*"); len(left) > 0 {
			t.Errorf("%s: %v left behind", p, left)
		}
	}
	var man map[string]string
	b, _ := os.ReadFile(filepath.Join(root, manifestName))
	if err := json.Unmarshal(b, &man); err != nil || len(man) != len(shipped)+1 || man[checkedKey] == "" {
		t.Fatalf("manifest of %d entries (%v), want %d and %s", len(man), err, len(shipped), checkedKey)
	}
	edited, deleted := filepath.Join(root, shipped[0]), filepath.Join(root, shipped[1])
	os.WriteFile(edited, []byte("mine\n"), 0644)
	os.Remove(deleted)
	st, _ := os.Stat(filepath.Join(root, manifestName))
	rep, err = Install(root, dirs...)
	if err != nil || len(rep.Installed) != 0 || len(rep.Upgraded) != 0 || len(rep.Kept) != 0 {
		t.Fatalf("second install: %+v %v", rep, err)
	}
	if st2, _ := os.Stat(filepath.Join(root, manifestName)); !os.SameFile(st, st2) {
		t.Errorf("second install rewrote the manifest")
	}
	// A newer shipped version (here: an older one recorded) replaces an
	// untouched copy and keeps the edited one. The manifest keeps its
	// checkedKey, as an older ollie that installed its own versions keeps
	// it: the changed entries are seen all the same.
	man[shipped[0]], man[shipped[2]] = "old", hash([]byte("old\n"))
	os.WriteFile(filepath.Join(root, shipped[2]), []byte("old\n"), 0644)
	b, _ = json.Marshal(man)
	os.WriteFile(filepath.Join(root, manifestName), b, 0600)
	rep, err = Install(root, dirs...)
	if err != nil || len(rep.Installed) != 0 || !slices.Equal(rep.Upgraded, shipped[2:3]) || !slices.Equal(rep.Kept, shipped[:1]) {
		t.Fatalf("upgrade: %+v %v", rep, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, shipped[2])); string(b) == "old\n" {
		t.Errorf("untouched %s not upgraded", shipped[2])
	}
	if b, _ := os.ReadFile(edited); string(b) != "mine\n" {
		t.Errorf("edited copy now %q", b)
	}
	if _, err := os.Stat(deleted); err == nil {
		t.Errorf("deleted %s installed again", shipped[1])
	}
}

// A first Install killed with SIGKILL at any point leaves what the next
// one completes: every shipped file whole, with the bytes shipped, and a
// manifest of them all. A file is renamed into place only whole, and the
// manifest is written after the files, so a crash can cost a rewrite but
// never a file the manifest counts as installed and is not.
func TestInstallKill9(t *testing.T) {
	dirs := []string{"a", "p", "sk", "t", "u", "x", "s", "b"}
	if root := os.Getenv("OLLIE_INSTALL_KILL9_ROOT"); root != "" {
		Install(root, dirs...)
		time.Sleep(time.Hour) // until killed
	}
	count := func(root string) int {
		n := 0
		filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	for _, k := range []int{0, 1, 3, 10, 30} {
		root := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestInstallKill9$")
		cmd.Env = append(os.Environ(), "OLLIE_INSTALL_KILL9_ROOT="+root)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); count(root) < k && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if _, err := Install(root, dirs...); err != nil {
			t.Fatalf("after a kill at %d files: %v", k, err)
		}
		var man map[string]string
		b, _ := os.ReadFile(filepath.Join(root, manifestName))
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatalf("after a kill at %d files: manifest %v", k, err)
		}
		n := 0
		for _, d := range dirs {
			fs.WalkDir(files, d, func(p string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() || filepath.Base(p)[0] == '.' {
					return err
				}
				n++
				want, _ := files.ReadFile(p)
				if got, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(got) != string(want) {
					t.Errorf("after a kill at %d files: %s is %d bytes (%v), want the %d shipped", k, p, len(got), err, len(want))
				}
				if man[p] != hash(want) {
					t.Errorf("after a kill at %d files: manifest has %q for %s", k, man[p], p)
				}
				return nil
			})
		}
		delete(man, checkedKey)
		if len(man) != n {
			t.Errorf("after a kill at %d files: manifest of %d, shipped %d", k, len(man), n)
		}
	}
}

// An Install finds in the manifest that this executable found every file
// of the same directories installed as shipped, and looks at no shipped
// file; anything else (other directories, a manifest changed since, a
// file kept as the user edited it) makes it look at them all.
func TestInstallSkipsWhatThisExecutableChecked(t *testing.T) {
	root := t.TempDir()
	dirs := []string{"a", "p", "sk", "t", "u", "x", "s", "b"}
	full := func(what string, want int64, dirs ...string) Report {
		t.Helper()
		n := fullChecks.Load()
		rep, err := Install(root, dirs...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := fullChecks.Load() - n; got != want {
			t.Errorf("%s: %d full checks, want %d", what, got, want)
		}
		return rep
	}
	full("first install", 1, dirs...)
	manPath := filepath.Join(root, manifestName)
	st, _ := os.Stat(manPath)
	for i := range 3 {
		if rep := full(fmt.Sprint("start ", i), 0, dirs...); len(rep.Installed)+len(rep.Upgraded)+len(rep.Kept) != 0 {
			t.Errorf("start %d: %+v", i, rep)
		}
	}
	if st2, _ := os.Stat(manPath); !os.SameFile(st, st2) {
		t.Errorf("a start with nothing to do rewrote the manifest")
	}
	full("other directories", 1, "a", "p")
	full("back to all", 1, dirs...)
	full("all again", 0, dirs...)

	// A shipped file edited by the user, whose recorded version is not
	// the shipped one: kept, and looked at by every start.
	var man map[string]string
	b, _ := os.ReadFile(manPath)
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	const p = "p/base.md"
	if _, ok := man[p]; !ok {
		t.Fatalf("%s not in the manifest", p)
	}
	os.WriteFile(filepath.Join(root, p), []byte("mine\n"), 0644)
	man[p] = hash([]byte("an older shipped version\n"))
	b, _ = json.Marshal(man)
	os.WriteFile(manPath, b, 0600)
	for i := range 2 {
		if rep := full(fmt.Sprint("with an edit kept, start ", i), 1, dirs...); !slices.Equal(rep.Kept, []string{p}) {
			t.Errorf("with an edit kept, start %d: %+v", i, rep)
		}
	}
	// The edit undone: upgraded, and the starts after look at nothing.
	os.WriteFile(filepath.Join(root, p), []byte("an older shipped version\n"), 0644)
	if rep := full("edit undone", 1, dirs...); !slices.Equal(rep.Upgraded, []string{p}) {
		t.Errorf("edit undone: %+v", rep)
	}
	full("after the upgrade", 0, dirs...)
}
