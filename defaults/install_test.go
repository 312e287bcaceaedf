package defaults

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
