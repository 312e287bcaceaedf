package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

// benchMount mounts a real daemon's tree with a 13-byte m/bench, for
// benchmarks (start is for tests: it wants a *testing.T).
func benchMount(b *testing.B) string {
	testutil.RequireFUSE(b)
	cfg := testutil.Home(b, nil)
	testutil.WriteFile(b, filepath.Join(cfg.DataDir, "m"), "bench", "hello, world\n", 0600)
	testutil.Daemon(b, cfg, daemon.Options{})
	mnt := filepath.Join(b.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0755); err != nil {
		b.Fatal(err)
	}
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", cfg.Socket) }
	srv, err := fusebridge.Mount(context.Background(), mnt, dial, fusebridge.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Unmount() })
	return mnt
}

func benchOp(b *testing.B, op func() error) {
	if err := op(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMountOpenReadClose is cat of a small file of the real daemon
// through the real mount, in-process (this test serves the mount).
// `ollie bench -only fuse` measures a mount in a process of its own.
func BenchmarkMountOpenReadClose(b *testing.B) {
	benchOp(b, bench.OpenReadClose(filepath.Join(benchMount(b), "m", "bench")))
}

// BenchmarkMountStat is stat of the same file.
func BenchmarkMountStat(b *testing.B) {
	benchOp(b, bench.Stat(filepath.Join(benchMount(b), "m", "bench")))
}

// BenchmarkMountHelp is cat of a generated file (direct I/O).
func BenchmarkMountHelp(b *testing.B) {
	benchOp(b, bench.OpenReadClose(filepath.Join(benchMount(b), "help")))
}
