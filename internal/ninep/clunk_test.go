package ninep

import (
	"context"
	"os"
	"testing"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// commitOnClose is a message file whose commit at close fails.
type commitOnClose struct{}

func (commitOnClose) ReadAt(context.Context, []byte, int64) (int, error) { return 0, nil }
func (commitOnClose) WriteAt(_ context.Context, p []byte, _ int64) (int, error) {
	return len(p), nil
}
func (commitOnClose) Close() error { return errs.E(errs.Invalid, "unfinished message") }

// The error of the close a Tclunk makes is its Rerror (NAMESPACE rule 1:
// over 9P the commit is the clunk), and the fid is gone all the same.
func TestClunkReturnsCloseError(t *testing.T) {
	fs := &tree.FS{Qids: tree.NewQids()}
	root := fs.NewRoot(0555, tree.Entry{Name: "msg", Node: fs.NewSynth("msg", 0666,
		func(context.Context, uint8) (tree.Handle, error) { return commitOnClose{}, nil })})
	srv := New(root)
	r1, w1, _ := os.Pipe()
	r2, w2, _ := os.Pipe()
	go func() { srv.ServeConn(r2, w1); r2.Close(); w1.Close() }()
	defer w2.Close()
	defer r1.Close()
	rpc := func(f *plan9.Fcall) *plan9.Fcall {
		t.Helper()
		if err := plan9.WriteFcall(w2, f); err != nil {
			t.Fatal(err)
		}
		r, err := readFcall(r1)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rpc(&plan9.Fcall{Type: plan9.Tversion, Tag: plan9.NOTAG, Msize: 8192, Version: "9P2000"})
	rpc(&plan9.Fcall{Type: plan9.Tattach, Tag: 1, Fid: 0, Afid: plan9.NOFID, Uname: "u"})
	rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: 1, Wname: []string{"msg"}})
	if r := rpc(&plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 1, Mode: plan9.OWRITE}); r.Type != plan9.Ropen {
		t.Fatalf("open: %v", r)
	}
	rpc(&plan9.Fcall{Type: plan9.Twrite, Tag: 1, Fid: 1, Data: []byte("half")})
	if r := rpc(&plan9.Fcall{Type: plan9.Tclunk, Tag: 1, Fid: 1}); r.Type != plan9.Rerror || r.Ename != "bad request: unfinished message" {
		t.Errorf("clunk: %v, want the close's error", r)
	}
	if r := rpc(&plan9.Fcall{Type: plan9.Tclunk, Tag: 1, Fid: 1}); r.Type != plan9.Rerror || r.Ename != "unknown fid" {
		t.Errorf("second clunk: %v, want unknown fid", r)
	}
}
