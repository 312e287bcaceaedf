package dirwatch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotSeesEveryChange: a snapshot holds until an entry of one of
// its directories is created, written, renamed or removed, or the
// directory itself is moved away; and a directory replaced at the same
// path is watched again.
func TestSnapshotSeesEveryChange(t *testing.T) {
	w := New()
	defer w.Close()
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(a, "f")
	if err := os.WriteFile(file, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"a file written in place", func() error { return os.WriteFile(file, []byte("2"), 0o600) }},
		{"a file made", func() error { return os.WriteFile(filepath.Join(b, "g"), nil, 0o600) }},
		{"a file renamed", func() error { return os.Rename(file, file+".new") }},
		{"a file removed", func() error { return os.Remove(file + ".new") }},
		{"a mode changed", func() error { return os.Chmod(filepath.Join(b, "g"), 0o700) }},
		{"the directory replaced by another", func() error {
			if err := os.Rename(a, a+".old"); err != nil {
				return err
			}
			return os.Mkdir(a, 0o700)
		}},
		{"a file made in the new one", func() error { return os.WriteFile(filepath.Join(a, "h"), nil, 0o600) }},
	}
	for _, s := range steps {
		snap, ok := w.Snapshot([]string{a, b})
		if !ok {
			t.Fatalf("before %s: cannot watch", s.what)
		}
		if !w.Unchanged(snap) {
			t.Fatalf("before %s: changed with nothing done", s.what)
		}
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		if w.Unchanged(snap) {
			t.Errorf("%s: not seen", s.what)
		}
	}
	if _, ok := w.Snapshot([]string{filepath.Join(root, "missing")}); ok {
		t.Error("a missing directory was watched")
	}
}
