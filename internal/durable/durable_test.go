package durable_test

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"ollie.dev/ollie/internal/durable"
)

// Replace gives the file the new content and mode, leaves no temporary
// file, and concurrent replaces of one name leave one of the contents
// whole.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	os.WriteFile(name, []byte("old"), 0o600)
	if err := durable.Replace(name, []byte("new\n"), 0o755, true); err != nil {
		t.Fatal(err)
	}
	if err := durable.Sync(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(name)
	fi, _ := os.Stat(name)
	if string(b) != "new\n" || fi.Mode().Perm() != 0o755 {
		t.Errorf("content %q, mode %v", b, fi.Mode())
	}
	var wg sync.WaitGroup
	datas := []string{"aaaa", "bbbbbbbb", "cccccccccccc"}
	for i := range 30 {
		wg.Go(func() {
			if err := durable.Replace(name, []byte(datas[i%3]), 0o644, i%2 == 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, _ = os.ReadFile(name)
	if s := string(b); s != datas[0] && s != datas[1] && s != datas[2] {
		t.Errorf("after concurrent replaces: %q", s)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left in the directory: %v", es)
	}
}

// A failed replace leaves the file as it was and no temporary file.
func TestReplaceFails(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	os.WriteFile(name, []byte("old"), 0o600)
	os.Mkdir(name+".d", 0o700)
	if err := durable.Replace(filepath.Join(dir, "nodir", "f"), []byte("x"), 0o644, true); err == nil {
		t.Error("a replace in a missing directory did not fail")
	}
	// A directory in the way of the rename.
	if err := durable.Replace(name+".d", []byte("x"), 0o644, false); err == nil {
		t.Error("a replace over a directory did not fail")
	}
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Errorf("file = %q", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("left in the directory: %v", es)
	}
	// A temporary file a crash left behind is no obstacle.
	for i := 1; i < 100; i++ {
		os.WriteFile(name+".tmp"+strconv.Itoa(i), []byte("crashed"), 0o600)
	}
	if err := durable.Replace(name, []byte("after"), 0o644, true); err != nil {
		t.Errorf("with leftovers: %v", err)
	}
	if err := durable.Sync(filepath.Join(dir, "nothing")); err == nil {
		t.Error("Sync of a missing path did not fail")
	}
}
