package ninep

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// zeroFile is a handle of an endless file of zero bytes: every read fills
// its buffer.
type zeroFile struct{}

func (zeroFile) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	clear(p)
	return len(p), nil
}
func (zeroFile) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, errs.E(errs.Permission)
}
func (zeroFile) Close() error { return nil }

// TestUnreadReplies: a client that pipelines reads and never reads the
// replies cannot make the server hold their bytes without bound. The
// server writes replies to the socket as they are made; once the client's
// socket is full, writing blocks, the connection's reader stops taking
// requests, and what it holds is bounded by MaxPending and
// MaxPendingBytes (limits.go), not by what the client sent. Other
// clients are served meanwhile, and hang-up releases everything.
func TestUnreadReplies(t *testing.T) {
	fs := &tree.FS{Qids: tree.NewQids(), Uid: "glenda", Mtime: 1000}
	big := fs.NewSynth("zeros", 0444, func(ctx context.Context, mode uint8) (tree.Handle, error) { return zeroFile{}, nil })
	srv := New(fs.NewRoot(0555, tree.Entry{Name: "t", Node: testTree(t)}, tree.Entry{Name: "zeros", Node: big}))
	path := listenUnix(t, srv)
	base := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapInuse

	r := dialRaw(t, path)
	r.attach()
	r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: 1, Wname: []string{"zeros"}}, plan9.Rwalk)
	r.rpc(&plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 1, Mode: plan9.OREAD}, plan9.Ropen)
	// 65,000 reads of 64 KiB, 4 GiB of replies, none read. Past the
	// MaxPending admitted, each is refused with a short Rerror: those are
	// replies too, 3 MB of them, more than the queue holds.
	const count, n = 64 << 10, 65000
	msg, err := (&plan9.Fcall{Type: plan9.Tread, Tag: 5, Fid: 1, Count: count}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var sent sync.WaitGroup
	sent.Add(1)
	done := make(chan int, 1)
	go func() {
		defer sent.Done()
		i := 0
		for ; i < n; i++ {
			// One tag per request at a time is all the protocol asks;
			// reusing tags past the pending ones draws "duplicate tag"
			// errors, which are replies too.
			msg[5], msg[6] = byte(i), byte(i>>8) // below NOTAG
			if _, err := r.c.Write(msg); err != nil {
				break
			}
		}
		done <- i
	}()
	// The server stops taking requests and the sender blocks; what is
	// tested is that the server's memory stays bounded meanwhile. The
	// observable is the server's count of reads served, which stops
	// growing (or the sender ends, had the server taken everything).
	ops := func() uint64 { return srv.Stats.Ops[opRead].Load() }
	settle(t, "reads served", func() bool { return ops() > 0 })
	var prev uint64
	settle(t, "the server's reader stopping", func() bool {
		cur := ops()
		stopped := cur == prev || len(done) > 0
		prev = cur
		return stopped
	})
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapInuse) - int64(heap0); grown > MaxPendingBytes+(16<<20) {
		t.Fatalf("the heap grew by %d MiB with %d GiB of replies unread", grown>>20, n*count>>30)
	}
	checkNormalClient(t, path)
	r.c.Close()
	sent.Wait()
	settle(t, "goroutines", func() bool { return runtime.NumGoroutine() <= base })
}
