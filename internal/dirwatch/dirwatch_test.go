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
		snap, ok := w.Snapshot([]Entry{{Dir: a}, {Dir: b}})
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
	if _, ok := w.Snapshot([]Entry{{Dir: filepath.Join(root, "missing")}}); ok {
		t.Error("a missing directory was watched")
	}
}

// TestSnapshotOfNames: a snapshot of names in a directory holds while
// other names there come and go, and not once one of its own is made,
// removed or renamed, or the directory moved.
func TestSnapshotOfNames(t *testing.T) {
	w := NewEntries()
	defer w.Close()
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	take := func() *Snap {
		t.Helper()
		s, ok := w.Snapshot([]Entry{{Dir: dir, Name: "tmp"}, {Dir: root, Name: "d"}})
		if !ok {
			t.Fatal("cannot watch")
		}
		return s
	}
	s := take()
	for _, f := range []string{"chat", "reply.new"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600)
	}
	os.Rename(filepath.Join(dir, "reply.new"), filepath.Join(dir, "reply"))
	os.Remove(filepath.Join(dir, "chat"))
	os.Mkdir(filepath.Join(root, "other"), 0o700)
	if !w.Unchanged(s) {
		t.Fatal("other names made, renamed and removed voided the snapshot")
	}
	os.Mkdir(filepath.Join(dir, "tmp"), 0o700)
	if w.Unchanged(s) {
		t.Error("tmp made: not seen")
	}
	s = take()
	os.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "tmp.old"))
	if w.Unchanged(s) {
		t.Error("tmp renamed away: not seen")
	}
	s = take()
	os.Rename(dir, filepath.Join(root, "d.old"))
	os.Mkdir(dir, 0o700)
	if w.Unchanged(s) {
		t.Error("the directory replaced: not seen")
	}
}
