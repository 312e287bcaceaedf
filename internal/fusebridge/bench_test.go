package fusebridge_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/fusebridge"
)

// In-process benchmarks: the bridge over an in-memory 9P server, next to
// go-fuse's in-memory file system and tmpfs, the system calls made by
// this test process, which also serves the mounts. `ollie bench`
// measures a mount of the real daemon from a process of its own.

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
	// A go-fuse in-memory file system holding one file: the floor of any
	// FUSE file system written in Go.
	root := &fs.Inode{}
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, FsName: "memfs", DisableXAttrs: true},
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		OnAdd: func(ctx context.Context) {
			f := root.NewPersistentInode(ctx, &fs.MemRegularFile{Data: []byte("hello, world\n"), Attr: fuse.Attr{Mode: 0644}}, fs.StableAttr{})
			root.AddChild("file", f, false)
		},
	}
	srv, err := fs.Mount(dir, root, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Unmount() })
	return filepath.Join(dir, "file")
}

func benchFile(b *testing.B, op func(path string) func() error) {
	for _, tt := range benchTargets {
		b.Run(tt.name, func(b *testing.B) {
			run := op(tt.setup(b))
			for range 10 { // warm up
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenReadClose: open(2), read(2) to EOF, close(2) of a 13-byte
// file.
func BenchmarkOpenReadClose(b *testing.B) { benchFile(b, bench.OpenReadClose) }

// BenchmarkStat: stat(2) of the same file.
func BenchmarkStat(b *testing.B) { benchFile(b, bench.Stat) }
