package fusebridge_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"ollie.dev/ollie/internal/fusebridge"
)

// benchTargets are the files compared: a file through our mount, the same
// through go-fuse's in-memory file system with its default 1s caching and
// with no caching (the same as ours), and tmpfs.
var benchTargets = []struct {
	name  string
	setup func(b *testing.B) string
}{
	{"ollie", func(b *testing.B) string {
		e := mount(b, fusebridge.Options{})
		return filepath.Join(e.mnt, "hello")
	}},
	{"memfs-1s", func(b *testing.B) string { return memfs(b, time.Second) }},
	{"memfs-0s", func(b *testing.B) string { return memfs(b, 0) }},
	{"tmpfs", func(b *testing.B) string {
		dir := "/dev/shm"
		if _, err := os.Stat(dir); err != nil {
			dir = os.TempDir()
		}
		p := filepath.Join(dir, "ollie-bench-"+b.Name()[len("Benchmark"):len("Benchmark")+4])
		if err := os.WriteFile(p, []byte("hello, world\n"), 0644); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.Remove(p) })
		return p
	}},
}

func memfs(b *testing.B, timeout time.Duration) string {
	requireFUSE(b)
	dir := b.TempDir()
	m, err := fusebridge.BenchMemFS(dir, []byte("hello, world\n"), timeout)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Unmount() })
	return m.Path
}

func bench(b *testing.B, op func(fusebridge.BenchResult) time.Duration) {
	for _, tt := range benchTargets {
		b.Run(tt.name, func(b *testing.B) {
			path := tt.setup(b)
			if _, err := fusebridge.BenchFile(path, 10); err != nil { // warm up
				b.Fatal(err)
			}
			b.ResetTimer()
			r, err := fusebridge.BenchFile(path, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(op(r).Nanoseconds()), "ns/file-op")
		})
	}
}

// BenchmarkOpenReadClose: open(2), read(2) to EOF, close(2) of a 13-byte
// file. (ns/op counts stat too; ns/file-op is the one to read.)
func BenchmarkOpenReadClose(b *testing.B) {
	bench(b, func(r fusebridge.BenchResult) time.Duration { return r.OpenReadClose })
}

// BenchmarkStat: stat(2) of the same file.
func BenchmarkStat(b *testing.B) {
	bench(b, func(r fusebridge.BenchResult) time.Duration { return r.Stat })
}
