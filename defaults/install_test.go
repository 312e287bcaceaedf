package defaults

import (
	"encoding/json"
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
		if _, err := os.Stat(filepath.Join(root, p) + ".tmp"); err == nil {
			t.Errorf("%s.tmp left behind", p)
		}
	}
	var man map[string]string
	b, _ := os.ReadFile(filepath.Join(root, manifestName))
	if err := json.Unmarshal(b, &man); err != nil || len(man) != len(shipped) {
		t.Fatalf("manifest of %d entries (%v), want %d", len(man), err, len(shipped))
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
	// untouched copy and keeps the edited one.
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
		if len(man) != n {
			t.Errorf("after a kill at %d files: manifest of %d, shipped %d", k, len(man), n)
		}
	}
}
