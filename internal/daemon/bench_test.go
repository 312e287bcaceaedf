package daemon_test

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"testing"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

// benchRoot starts a daemon with a 13-byte m/bench and attaches to it.
func benchRoot(b *testing.B) *client.Fid {
	cfg := testutil.Home(b, nil)
	testutil.WriteFile(b, filepath.Join(cfg.DataDir, "m"), "bench", "hello, world\n", 0600)
	testutil.Daemon(b, cfg, daemon.Options{})
	c, err := client.Dial(context.Background(), "unix", cfg.Socket)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	root, err := c.Attach(context.Background(), "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	return root
}

// BenchmarkReadSmallFile is `ollie cat m/bench`: walk, open, read, clunk.
// Compare with BenchmarkSocketFloor/4.
func BenchmarkReadSmallFile(b *testing.B) {
	root := benchRoot(b)
	ctx := context.Background()
	buf := make([]byte, 8192)
	for b.Loop() {
		f, err := root.Walk(ctx, "m", "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Open(ctx, plan9.OREAD); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Read(ctx, buf, 0); err != nil {
			b.Fatal(err)
		}
		f.Clunk(ctx)
	}
}

// BenchmarkPread is one Tread on an open fid. Compare with
// BenchmarkSocketFloor/1.
func BenchmarkPread(b *testing.B) {
	f, err := benchRoot(b).Walk(context.Background(), "m", "bench")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := f.Open(ctx, plan9.OREAD); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 8192)
	for b.Loop() {
		if _, err := f.Read(ctx, buf, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSocketFloor is 1 and 4 round trips of small messages to an echo
// server on a unix socket: the floor of the benchmarks above.
func BenchmarkSocketFloor(b *testing.B) {
	for _, k := range []int{1, 4} {
		b.Run(string(rune('0'+k)), func(b *testing.B) {
			dir, err := os.MkdirTemp("", "ol")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			e, err := bench.NewEcho(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			op := e.RoundTrips(k)
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The benchmarks below are the same requests from a client that writes
// prepared messages and reads each reply itself, as the socket floor's
// client does: no reader goroutine to hand replies over. They measure
// the server alone; the difference from the ones above is the client's.

// BenchmarkReadSmallFileRaw: compare with BenchmarkSocketFloor/4.
func BenchmarkReadSmallFileRaw(b *testing.B) {
	rt := rawConn(b)
	msgs := [][]byte{
		fcall(b, &plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 1, Newfid: 2, Wname: []string{"m", "bench"}}),
		fcall(b, &plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 2, Mode: plan9.OREAD}),
		fcall(b, &plan9.Fcall{Type: plan9.Tread, Tag: 1, Fid: 2, Count: 8192}),
		fcall(b, &plan9.Fcall{Type: plan9.Tclunk, Tag: 1, Fid: 2}),
	}
	for b.Loop() {
		for _, m := range msgs {
			rt(m)
		}
	}
}

// BenchmarkPreadRaw: compare with BenchmarkSocketFloor/1.
func BenchmarkPreadRaw(b *testing.B) {
	rt := rawConn(b)
	rt(fcall(b, &plan9.Fcall{Type: plan9.Twalk, Tag: 1, Fid: 1, Newfid: 2, Wname: []string{"m", "bench"}}))
	rt(fcall(b, &plan9.Fcall{Type: plan9.Topen, Tag: 1, Fid: 2, Mode: plan9.OREAD}))
	read := fcall(b, &plan9.Fcall{Type: plan9.Tread, Tag: 1, Fid: 2, Count: 8192})
	for b.Loop() {
		rt(read)
	}
}

// rawConn attaches fid 1 to a daemon serving m/bench and returns a round
// trip: write a message, read the reply whole, fail on Rerror.
func rawConn(b *testing.B) func(msg []byte) {
	cfg := testutil.Home(b, nil)
	testutil.WriteFile(b, filepath.Join(cfg.DataDir, "m"), "bench", "hello, world\n", 0600)
	testutil.Daemon(b, cfg, daemon.Options{})
	conn, err := net.Dial("unix", cfg.Socket)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	buf := make([]byte, 16384)
	rt := func(msg []byte) {
		if _, err := conn.Write(msg); err != nil {
			b.Fatal(err)
		}
		n := 0
		for n < 4 || n < int(binary.LittleEndian.Uint32(buf)) {
			k, err := conn.Read(buf[n:])
			if err != nil {
				b.Fatal(err)
			}
			n += k
		}
		if buf[4] == plan9.Rerror {
			f, _ := plan9.UnmarshalFcall(buf[:n])
			b.Fatalf("%v", f)
		}
	}
	rt(fcall(b, &plan9.Fcall{Type: plan9.Tversion, Tag: plan9.NOTAG, Msize: 8192 + plan9.IOHDRSZ, Version: "9P2000"}))
	rt(fcall(b, &plan9.Fcall{Type: plan9.Tattach, Tag: 1, Fid: 1, Afid: plan9.NOFID, Uname: "bench"}))
	return rt
}

func fcall(b *testing.B, f *plan9.Fcall) []byte {
	m, err := f.Bytes()
	if err != nil {
		b.Fatal(err)
	}
	return m
}
