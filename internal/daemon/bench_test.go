package daemon_test

import (
	"context"
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
