package tree

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"9fans.net/go/plan9"
)

// slowSnapshot embeds a Snapshot and replaces its ReadAt by one that
// blocks: it must not inherit the Snapshot's place in the reader.
type slowSnapshot struct{ Snapshot }

func (*slowSnapshot) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// slowDir embeds a StaticDir; its List could be anything.
type slowDir struct{ *StaticDir }

// TestImmediate: the handles served at once are exactly this package's
// listed types, never one that embeds them.
func TestImmediate(t *testing.T) {
	fs := &FS{Qids: NewQids(), Uid: "glenda"}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	open := func(n Node, mode uint8) Handle {
		h, err := n.(File).Open(context.Background(), mode)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	plain := fs.NewDiskDir("d", root, &DiskPolicy{Write: true})
	valid := fs.NewDiskDir("v", root, &DiskPolicy{Write: true, Validate: func(string, []byte) error { return nil }})
	pf, _ := plain.Walk("f")
	vf, _ := valid.Walk("f")
	text := fs.Text("t", func() ([]byte, error) { return []byte("t"), nil })
	rw := fs.RW("rw", func() ([]byte, error) { return nil, nil }, func(context.Context, []byte) error { return nil })
	ctl := fs.Ctl("ctl", func(context.Context, []byte) error { return nil })
	for _, c := range []struct {
		name string
		h    Handle
		want bool
	}{
		{"snapshot", &Snapshot{Data: []byte("x")}, true},
		{"text", open(text, plan9.OREAD), true},
		{"rw", open(rw, plan9.ORDWR), true},
		{"ctl", open(ctl, plan9.OWRITE), true},
		{"disk file", open(pf, plan9.ORDWR), true},
		{"validated file read", open(vf, plan9.OREAD), true},     // a pread, as of any disk file
		{"validated file written", open(vf, plan9.ORDWR), false}, // its reads wait for a commit's fsync
		{"embedded snapshot", &slowSnapshot{}, false},
	} {
		if got := Immediate(c.h); got != c.want {
			t.Errorf("Immediate(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		n    Node
		mode uint8
		want bool
	}{
		{"static dir", fs.NewDir("s", 0555), plan9.OREAD, true},
		{"embedded static dir", slowDir{fs.NewDir("s", 0555)}, plan9.OREAD, false},
		{"disk dir", plain, plan9.OREAD, false},
		{"disk file read", pf, plan9.OREAD, true},
		{"disk file write", pf, plan9.OWRITE, false},
		{"disk file trunc", pf, plan9.OREAD | plan9.OTRUNC, false},
		{"synth", text, plan9.OREAD, false}, // its render may take any lock
		{"ctl", ctl, plan9.OWRITE, false},
	} {
		if got := OpensAtOnce(c.n, c.mode); got != c.want {
			t.Errorf("OpensAtOnce(%s, %#x) = %v, want %v", c.name, c.mode, got, c.want)
		}
	}
}
