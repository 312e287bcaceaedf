package tree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

func testDir(t *testing.T, validate func(string, []byte) error) (*DiskDir, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	fs := &FS{Qids: NewQids()}
	pol := &DiskPolicy{Create: true, Write: true, Sync: true, Atomic: true, Validate: validate}
	return fs.NewDiskDir("m", root, pol), dir
}

func openFile(t *testing.T, d *DiskDir, name string, mode uint8) Handle {
	t.Helper()
	n, err := d.Walk(name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.(File).Open(context.Background(), mode)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func disk(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An open with O_TRUNC leaves the file alone until its commit, which
// replaces it whole; a write over the limit voids the open's changes.
func TestRewriteAtCommit(t *testing.T) {
	ctx := context.Background()
	d, dir := testDir(t, nil)
	os.WriteFile(filepath.Join(dir, "note"), []byte("old\n"), 0644)
	h := openFile(t, d, "note", plan9.OWRITE|plan9.OTRUNC)
	if got := disk(t, dir, "note"); got != "old\n" {
		t.Fatalf("after the open: %q", got)
	}
	h.WriteAt(ctx, []byte("new "), 0)
	h.WriteAt(ctx, []byte("text"), 4)
	if got := disk(t, dir, "note"); got != "old\n" {
		t.Fatalf("before the commit: %q", got)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := disk(t, dir, "note"); got != "new text" {
		t.Fatalf("after the commit: %q", got)
	}

	h = openFile(t, d, "note", plan9.OWRITE|plan9.OTRUNC)
	h.WriteAt(ctx, []byte("part"), 0)
	if _, err := h.WriteAt(ctx, make([]byte, 10), maxRewritten-5); !errs.Is(err, errs.TooLarge) {
		t.Errorf("write over the limit: %v", err)
	}
	if err := h.Close(); !errs.Is(err, errs.TooLarge) {
		t.Errorf("close after a write over the limit: %v", err)
	}
	if got := disk(t, dir, "note"); got != "new text" {
		t.Errorf("after a voided open: %q", got)
	}
}

// An append commits in place: the file keeps its inode, so tail -f,
// which follows the descriptor, sees it.
func TestAppendInPlace(t *testing.T) {
	ctx := context.Background()
	d, dir := testDir(t, nil)
	os.WriteFile(filepath.Join(dir, "log"), []byte("one\n"), 0644)
	before, _ := os.Stat(filepath.Join(dir, "log"))
	h := openFile(t, d, "log", plan9.OWRITE)
	h.WriteAt(ctx, []byte("two\n"), 4)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, "log"))
	if got := disk(t, dir, "log"); got != "one\ntwo\n" || !os.SameFile(before, after) {
		t.Errorf("after the append: %q, same file %v", got, os.SameFile(before, after))
	}
}

// A validated document that is only unfinished at the close fails the
// close, and a file the open created is removed again.
func TestValidatedCommit(t *testing.T) {
	ctx := context.Background()
	validate := func(_ string, b []byte) error {
		switch {
		case strings.HasPrefix(string(b), "bad"):
			return errs.E(errs.Invalid, "bad")
		case !strings.HasSuffix(string(b), "}"):
			return ErrIncomplete
		}
		return nil
	}
	d, dir := testDir(t, validate)
	_, h, err := d.Create(ctx, "x.json", 0644, plan9.OWRITE)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(ctx, []byte("{\"a\":"), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); !errs.Is(err, errs.Invalid) {
		t.Errorf("close of an unfinished document: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.json")); !os.IsNotExist(err) {
		t.Errorf("x.json left behind: %v", err)
	}
}

// Reads, writes and commits of one open run concurrently (go test -race).
func TestRewriteConcurrent(t *testing.T) {
	ctx := context.Background()
	d, dir := testDir(t, nil)
	os.WriteFile(filepath.Join(dir, "c"), nil, 0644)
	h := openFile(t, d, "c", plan9.ORDWR)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for j := range 50 {
				h.WriteAt(ctx, []byte("1234"), int64((i*50+j)*4))
			}
		}()
		go func() {
			defer wg.Done()
			p := make([]byte, 16)
			for range 50 {
				h.ReadAt(ctx, p, 0)
			}
		}()
		go func() {
			defer wg.Done()
			for range 5 {
				h.(interface{ Sync() error }).Sync()
			}
		}()
	}
	wg.Wait()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if got := disk(t, dir, "c"); got != strings.Repeat("1234", 200) {
		t.Errorf("content is %d bytes", len(got))
	}
}
