package ninep

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/tree"
)

// openCount counts the handles of a tree's blocking file still open.
type openCount struct{ n atomic.Int64 }

// countedBlocker is a handle whose reads block until their request is
// flushed or the connection ends; Close counts it gone.
type countedBlocker struct{ c *openCount }

func (b *countedBlocker) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	<-ctx.Done()
	return 0, errs.E(errs.Interrupted)
}

func (b *countedBlocker) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, errs.E(errs.Permission)
}

func (b *countedBlocker) Close() error { b.c.n.Add(-1); return nil }

// limitTree is testTree (transcript_test.go) plus "wait", a file whose
// reads block until ctx is done and whose open handles are counted.
func limitTree(t testing.TB) (tree.Dir, *openCount) {
	oc := &openCount{}
	fs := &tree.FS{Qids: tree.NewQids(), Uid: "glenda", Mtime: 1000}
	wait := fs.NewSynth("wait", 0444, func(ctx context.Context, mode uint8) (tree.Handle, error) {
		oc.n.Add(1)
		return &countedBlocker{c: oc}, nil
	})
	return fs.NewRoot(0555,
		tree.Entry{Name: "t", Node: testTree(t)},
		tree.Entry{Name: "wait", Node: wait},
	), oc
}

// listenUnix serves srv on a unix socket, each connection as the daemon
// serves one, and returns the socket's path. The listener closes with
// the test.
func listenUnix(t *testing.T, srv *Server) string {
	path := filepath.Join(t.TempDir(), "9p")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { srv.ServeConn(c, c); c.Close() }()
		}
	}()
	return path
}

// rawConn speaks 9P by hand, for requests no client would send.
type rawConn struct {
	t *testing.T
	c net.Conn
}

func dialRaw(t *testing.T, path string) *rawConn {
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, c: c}
}

func (r *rawConn) send(f *plan9.Fcall) {
	r.t.Helper()
	b, err := f.Bytes()
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(b)
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// recv reads one reply. The deadline only keeps a broken server from
// hanging the test; nothing is asserted about time.
func (r *rawConn) recv() *plan9.Fcall {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := plan9.ReadFcall(r.c)
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	return f
}

// rpc sends f and requires a reply of type want.
func (r *rawConn) rpc(f *plan9.Fcall, want uint8) *plan9.Fcall {
	r.t.Helper()
	r.send(f)
	g := r.recv()
	if g.Type != want {
		r.t.Fatalf("%v: got %v", f, g)
	}
	return g
}

// attach negotiates and attaches fid 0 to the root.
func (r *rawConn) attach() {
	r.t.Helper()
	r.rpc(&plan9.Fcall{Type: plan9.Tversion, Tag: plan9.NOTAG, Msize: DefaultMsize, Version: "9P2000"}, plan9.Rversion)
	r.rpc(&plan9.Fcall{Type: plan9.Tattach, Tag: 1, Fid: 0, Afid: plan9.NOFID, Uname: "glenda"}, plan9.Rattach)
}

// checkNormalClient requires that the server at path still serves an
// ordinary client: walk, open and read of t/hello.
func checkNormalClient(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	c, err := client.Dial(ctx, "unix", path)
	if err != nil {
		t.Fatalf("dial after the abuse: %v", err)
	}
	defer c.Close()
	root, err := c.Attach(ctx, "glenda", "")
	if err != nil {
		t.Fatalf("attach after the abuse: %v", err)
	}
	f, err := root.Walk(ctx, "t", "hello")
	if err != nil {
		t.Fatalf("walk after the abuse: %v", err)
	}
	defer f.Clunk(ctx)
	if err := f.Open(ctx, plan9.OREAD); err != nil {
		t.Fatalf("open after the abuse: %v", err)
	}
	buf := make([]byte, 100)
	n, err := f.ReadAt(ctx, buf, 0)
	if err != nil && err != io.EOF || string(buf[:n]) != "hello, world" {
		t.Fatalf("read after the abuse: %q, %v", buf[:n], err)
	}
}

// settle waits until cond holds, for at most a minute (a server that
// never releases fails the test rather than hanging it). It polls: what
// it waits for, goroutines ending, has no event to wait on.
func settle(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not released within a minute", what)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// fidsHeld is how many fids the server's connections hold: every fid
// made (attach, walk) is counted as a clunk when it ends.
func fidsHeld(s *Server) int64 {
	return int64(s.Stats.Ops[opAttach].Load()+s.Stats.Ops[opWalk].Load()) - int64(s.Stats.Ops[opClunk].Load())
}
