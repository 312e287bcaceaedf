package ninep

import (
	"runtime"
	"testing"

	"9fans.net/go/plan9"
)

// TestPendingLimit: MaxPending blocking reads are served, the next one is
// refused with a clear error, a clunk is still served, and at hang-up
// every read, goroutine, handle and fid is released.
func TestPendingLimit(t *testing.T) {
	root, open := limitTree(t)
	srv := New(root)
	path := listenUnix(t, srv)
	base := runtime.NumGoroutine()

	r := dialRaw(t, path)
	r.attach()
	// One fid per read: each open of wait is a handle to release.
	for i := 0; i < MaxPending; i++ {
		fid := uint32(1 + i)
		r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: fid, Wname: []string{"wait"}}, plan9.Rwalk)
		r.rpc(&plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: fid, Mode: plan9.OREAD}, plan9.Ropen)
	}
	for i := 0; i < MaxPending; i++ {
		r.send(&plan9.Fcall{Type: plan9.Tread, Tag: uint16(10 + i), Fid: uint32(1 + i), Count: 100})
	}
	over := &plan9.Fcall{Type: plan9.Tread, Tag: 9, Fid: 1, Count: 100}
	if g := r.rpc(over, plan9.Rerror); g.Ename != "too many outstanding requests" || g.Tag != 9 {
		t.Fatalf("read past the limit: %v", g)
	}
	// A clunk is never refused: a client can always let go.
	r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 2, Fid: 0, Newfid: 99999, Wname: []string{"t"}}, plan9.Rwalk)
	if g := r.rpc(&plan9.Fcall{Type: plan9.Tclunk, Tag: 3, Fid: 99999}, plan9.Rclunk); g.Tag != 3 {
		t.Fatalf("clunk at the limit: %v", g)
	}
	if n := open.n.Load(); n != MaxPending {
		t.Fatalf("%d handles open, want %d", n, MaxPending)
	}
	if runtime.NumGoroutine() < base+MaxPending {
		t.Fatalf("%d goroutines with %d reads blocked, from %d", runtime.NumGoroutine(), MaxPending, base)
	}
	r.c.Close()
	settle(t, "blocked reads", func() bool { return runtime.NumGoroutine() <= base })
	settle(t, "handles", func() bool { return open.n.Load() == 0 })
	settle(t, "fids", func() bool { return fidsHeld(srv) == 0 })
	checkNormalClient(t, path)
}

// TestFidLimit: a connection may hold MaxFids fids; a walk or attach to
// one more is refused and the connection goes on; hang-up clunks them all.
func TestFidLimit(t *testing.T) {
	root, _ := limitTree(t)
	srv := New(root)
	path := listenUnix(t, srv)
	r := dialRaw(t, path)
	r.attach() // fid 0
	walk := func(tag uint16, newfid uint32) {
		r.send(&plan9.Fcall{Type: plan9.Twalk, Tag: tag, Fid: 0, Newfid: newfid, Wname: []string{"t"}})
	}
	// Pipelined in batches: the replies are read as they come.
	const batch = 512
	for i := 1; i < MaxFids; i += batch {
		n := 0
		for j := i; j < i+batch && j < MaxFids; j++ {
			walk(uint16(j%batch), uint32(j))
			n++
		}
		for ; n > 0; n-- {
			if g := r.recv(); g.Type != plan9.Rwalk {
				t.Fatalf("walk %d of %d: %v", i, MaxFids, g)
			}
		}
	}
	if h := fidsHeld(srv); h != MaxFids {
		t.Fatalf("server holds %d fids, want %d", h, MaxFids)
	}
	walk(7, MaxFids)
	if g := r.recv(); g.Type != plan9.Rerror || g.Ename != "too many fids" {
		t.Fatalf("walk past the limit: %v", g)
	}
	over := &plan9.Fcall{Type: plan9.Tattach, Tag: 8, Fid: MaxFids + 1, Afid: plan9.NOFID, Uname: "glenda"}
	if g := r.rpc(over, plan9.Rerror); g.Ename != "too many fids" {
		t.Fatalf("attach past the limit: %v", g)
	}
	// Walking a fid onto itself makes none, and is served.
	r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 9, Fid: 5, Newfid: 5}, plan9.Rwalk)
	// Clunking one makes room for one.
	r.rpc(&plan9.Fcall{Type: plan9.Tclunk, Tag: 10, Fid: 5}, plan9.Rclunk)
	walk(11, MaxFids)
	if g := r.recv(); g.Type != plan9.Rwalk {
		t.Fatalf("walk after a clunk: %v", g)
	}
	r.c.Close()
	settle(t, "fids", func() bool { return fidsHeld(srv) == 1 }) // the self-walk counted a walk, made no fid
	checkNormalClient(t, path)
}

// TestPendingBytes: blocking reads of a whole msize each are admitted
// until their buffers reach MaxPendingBytes; the next is refused.
func TestPendingBytes(t *testing.T) {
	root, open := limitTree(t)
	srv := New(root)
	path := listenUnix(t, srv)
	r := dialRaw(t, path)
	r.attach()
	r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: 1, Wname: []string{"wait"}}, plan9.Rwalk)
	r.rpc(&plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 1, Mode: plan9.OREAD}, plan9.Ropen)
	fit := MaxPendingBytes / DefaultMsize
	for i := 0; i < fit; i++ {
		r.send(&plan9.Fcall{Type: plan9.Tread, Tag: uint16(10 + i), Fid: 1, Count: DefaultMsize})
	}
	over := &plan9.Fcall{Type: plan9.Tread, Tag: 9, Fid: 1, Count: DefaultMsize}
	if g := r.rpc(over, plan9.Rerror); g.Ename != "too many outstanding requests" {
		t.Fatalf("read past %d bytes: %v", MaxPendingBytes, g)
	}
	// A small one still fits.
	r.send(&plan9.Fcall{Type: plan9.Tread, Tag: 8, Fid: 1, Count: 100})
	r.rpc(&plan9.Fcall{Type: plan9.Tflush, Tag: 7, Oldtag: 8}, plan9.Rerror) // the read's interrupted reply
	if g := r.recv(); g.Type != plan9.Rflush || g.Tag != 7 {
		t.Fatalf("flush: %v", g)
	}
	r.c.Close()
	settle(t, "handles", func() bool { return open.n.Load() == 0 })
}
