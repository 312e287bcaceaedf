package ninep

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"9fans.net/go/plan9"
)

// TestConnFuzz attacks a real server over a unix socket the way a hostile
// client would: malformed, truncated and oversized frames; fid and tag
// abuse; a flush storm; thousands of connections, each with a blocking
// read outstanding. Afterwards the server must be alive, serve a normal
// client, and have released what the attack made it hold.
//
// The server runs in this test's process, so its memory is this
// process's: the Go heap (runtime.MemStats, after a GC) is what is
// checked, and the RSS (/proc/self/status) is logged next to it.
func TestConnFuzz(t *testing.T) {
	root, open := limitTree(t)
	srv := New(root)
	path := listenUnix(t, srv)
	checkNormalClient(t, path) // warm up: pools, the listener's goroutine
	base := runtime.NumGoroutine()
	heap0, rss0 := memory()
	rng := rand.New(rand.NewPCG(11, 10))

	frames(t, path, rng)
	fidAbuse(t, path)
	flushStorm(t, path)
	heapPeak := manyConns(t, path, open)

	settle(t, "goroutines", func() bool { return runtime.NumGoroutine() <= base })
	settle(t, "handles", func() bool { return open.n.Load() == 0 })
	checkNormalClient(t, path)
	heap1, rss1 := memory()
	t.Logf("heap %d KiB before, %d KiB with 2,000 connections, %d KiB after; RSS %d KiB before, %d KiB after",
		heap0>>10, heapPeak>>10, heap1>>10, rss0>>10, rss1>>10)
	if heap1 > heap0+8<<20 { // room for pooled buffers and grown maps
		t.Errorf("heap grew from %d KiB to %d KiB and stayed", heap0>>10, heap1>>10)
	}
}

// memory returns the heap in use after a collection, and the RSS.
func memory() (heap, rss uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	return ms.HeapInuse, rss
}

// frames sends broken frames, each on a connection of its own, after a
// version and an attach: random bodies under a right size, bodies cut
// short, sizes past msize or under a header, and random bytes.
func frames(t *testing.T, path string, rng *rand.Rand) {
	for i := 0; i < 300; i++ {
		r := dialRaw(t, path)
		r.attach()
		var b []byte
		switch i % 5 {
		case 0: // a random body of a request type, its size right
			body := make([]byte, 3+rng.IntN(64))
			for j := range body {
				body[j] = byte(rng.Uint32())
			}
			body[0] = byte(plan9.Tversion + 2*rng.IntN(14))
			b = append(binary.LittleEndian.AppendUint32(nil, uint32(4+len(body))), body...)
		case 1: // cut short: the size promises more than comes
			b = append(hostileWrite(1)[:4:4], plan9.Twrite, 1, 0, 1)
			binary.LittleEndian.PutUint32(b, 4000)
		case 2: // over msize
			b = binary.LittleEndian.AppendUint32(nil, 0xffffffff)
		case 3: // under a header
			b = binary.LittleEndian.AppendUint32(nil, uint32(rng.IntN(hdrSize)))
		case 4: // noise
			b = make([]byte, 1+rng.IntN(200))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		}
		// The server may hang up on any of these (a size past msize or
		// under a header ends the conversation): write errors are
		// expected.
		r.c.Write(b)
		for k := 0; k < 3; k++ {
			r.c.Write(hostileWrite(uint16(k))) // 3 of these killed the daemon
		}
		r.c.Close()
	}
}

// fidAbuse misuses fids and tags on one connection; each request gets a
// reply, and the connection survives all of them.
func fidAbuse(t *testing.T, path string) {
	r := dialRaw(t, path)
	defer r.c.Close()
	r.attach()
	long := make([]string, 100)
	for i := range long {
		long[i] = "t"
	}
	calls := []*plan9.Fcall{
		{Type: plan9.Tattach, Tag: 1, Fid: 0, Afid: plan9.NOFID}, // duplicate fid
		{Type: plan9.Tattach, Tag: 1, Fid: 5, Afid: 77},          // unknown afid
		{Type: plan9.Twalk, Tag: 1, Fid: 42, Newfid: 43},         // unknown fid
		{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: 0, Wname: []string{"nope"}},
		{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: plan9.NOFID, Wname: []string{"t"}},
		{Type: plan9.Twalk, Tag: 1, Fid: plan9.NOFID, Newfid: 1},
		{Type: plan9.Tclunk, Tag: 1, Fid: 1234},
		{Type: plan9.Tread, Tag: 1, Fid: 0, Count: 0xffffffff}, // unopened, huge count
		{Type: plan9.Topen, Tag: 1, Fid: 0, Mode: plan9.OWRITE},
		{Type: plan9.Topen, Tag: 1, Fid: 0, Mode: plan9.OREAD},
		{Type: plan9.Topen, Tag: 1, Fid: 0, Mode: plan9.OREAD}, // twice
		{Type: plan9.Tread, Tag: 1, Fid: 0, Offset: 1 << 63, Count: 10},
		{Type: plan9.Tread, Tag: 1, Fid: 0, Count: 0xffffffff},
		{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: 9, Wname: []string{"t"}}, // clone of open fid
		{Type: plan9.Tremove, Tag: 1, Fid: 0},
		{Type: plan9.Tstat, Tag: plan9.NOTAG, Fid: 0},
		{Type: plan9.Tflush, Tag: 1, Oldtag: 1},
	}
	for _, f := range calls {
		r.send(f)
		if g := r.recv(); g.Tag != f.Tag {
			t.Fatalf("%v: reply %v", f, g)
		}
	}
	// A walk of 100 names is malformed (MAXWELEM is 16).
	raw := walkBytes(2, 0, 3, long)
	r.write(raw)
	if g := r.recv(); g.Type != plan9.Rerror {
		t.Fatalf("walk of 100 names: %v", g)
	}
	// A tag reused while its request runs: the second is refused.
	r.rpc(&plan9.Fcall{Type: plan9.Tattach, Tag: 1, Fid: 20, Afid: plan9.NOFID}, plan9.Rattach)
	r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 20, Newfid: 21, Wname: []string{"wait"}}, plan9.Rwalk)
	r.rpc(&plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 21, Mode: plan9.OREAD}, plan9.Ropen)
	r.send(&plan9.Fcall{Type: plan9.Tread, Tag: 30, Fid: 21, Count: 10})
	if g := r.rpc(&plan9.Fcall{Type: plan9.Tread, Tag: 30, Fid: 21, Count: 10}, plan9.Rerror); g.Ename != "duplicate tag" {
		t.Fatalf("reused tag: %v", g)
	}
}

// walkBytes encodes a Twalk of any number of names, which Fcall.Bytes
// refuses past 16.
func walkBytes(tag uint16, fid, newfid uint32, names []string) []byte {
	b := []byte{0, 0, 0, 0, plan9.Twalk, byte(tag), byte(tag >> 8)}
	b = binary.LittleEndian.AppendUint32(b, fid)
	b = binary.LittleEndian.AppendUint32(b, newfid)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(names)))
	for _, n := range names {
		b = append(binary.LittleEndian.AppendUint16(b, uint16(len(n))), n...)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	return b
}

// flushStorm flushes one blocking read 50,000 times, and tags that run
// nothing as many times: every flush is answered, the read first.
func flushStorm(t *testing.T, path string) {
	r := dialRaw(t, path)
	defer r.c.Close()
	r.attach()
	r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: 1, Wname: []string{"wait"}}, plan9.Rwalk)
	r.rpc(&plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 1, Mode: plan9.OREAD}, plan9.Ropen)
	const n = 50000
	replies := make(chan int, 1)
	r.c.SetReadDeadline(time.Now().Add(2 * time.Minute)) // a guard, not an assertion
	go func() {
		flushes := 0
		for {
			f, err := plan9.ReadFcall(r.c)
			if err != nil {
				break
			}
			if f.Type == plan9.Rflush {
				flushes++
			}
			if flushes == 2*n {
				break
			}
		}
		replies <- flushes
	}()
	var b []byte
	b, _ = (&plan9.Fcall{Type: plan9.Tread, Tag: 0, Fid: 1, Count: 10}).Bytes()
	for i := 1; i <= n; i++ {
		fl, _ := (&plan9.Fcall{Type: plan9.Tflush, Tag: uint16(i), Oldtag: 0}).Bytes()
		b = append(b, fl...)
		// A tag reused at once, flushing a tag that runs nothing: each
		// is answered in the reader, so the tag is free again.
		fl, _ = (&plan9.Fcall{Type: plan9.Tflush, Tag: 60000, Oldtag: 60001}).Bytes()
		b = append(b, fl...)
	}
	r.write(b)
	if got := <-replies; got != 2*n {
		t.Fatalf("%d of %d flushes answered", got, 2*n)
	}
}

// manyConns opens 2,000 connections, each with a blocking read running,
// then hangs them all up. It returns the heap in use while they lasted.
func manyConns(t *testing.T, path string, open *openCount) uint64 {
	const n = 2000
	conns := make([]*rawConn, n)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				r := dialRaw(t, path)
				r.attach()
				r.rpc(&plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 0, Newfid: 1, Wname: []string{"wait"}}, plan9.Rwalk)
				r.rpc(&plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 1, Mode: plan9.OREAD}, plan9.Ropen)
				r.send(&plan9.Fcall{Type: plan9.Tread, Tag: 2, Fid: 1, Count: 10})
				conns[i] = r
			}
		}(w)
	}
	wg.Wait()
	// Every read has been admitted once a request behind it is answered.
	for _, r := range conns {
		r.rpc(&plan9.Fcall{Type: plan9.Tstat, Tag: 3, Fid: 0}, plan9.Rstat)
	}
	if got := open.n.Load(); got != n {
		t.Fatalf("%d handles open with %d connections", got, n)
	}
	heap, _ := memory()
	for _, r := range conns {
		r.c.Close()
	}
	return heap
}
