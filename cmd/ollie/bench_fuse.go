package main

import (
	"os"
	"path/filepath"
	"time"

	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/fusebridge"
)

func init() {
	registerBench(&benchSection{
		name: "fuse",
		doc:  "file operations through the FUSE mount, next to go-fuse's in-memory file system and tmpfs",
		run:  benchFUSE,
	})
}

// benchFUSE measures cat and stat of a small file through the mount of the
// daemon's tree, through go-fuse's in-memory file system (the floor of a
// FUSE file system in Go, with the same caching as a plain file of the
// mount, 1s, and with none, like the mount's generated files), and on
// tmpfs (no FUSE at all).
func benchFUSE(b *benchEnv) ([]benchRow, error) {
	mnt, err := b.mount()
	if err != nil {
		return nil, err
	}
	mem1, err := memfs(b, "memfs1s", time.Second)
	if err != nil {
		return nil, err
	}
	mem0, err := memfs(b, "memfs0s", 0)
	if err != nil {
		return nil, err
	}
	tdir, undo, err := bench.Tmpfs(b.dir)
	if err != nil {
		return nil, err
	}
	b.onClose(undo)
	tmp := filepath.Join(tdir, "file")
	if err := os.WriteFile(tmp, []byte(benchContent), 0600); err != nil {
		return nil, err
	}
	file := filepath.Join(mnt, filepath.FromSlash(benchFile))
	return measureRows(b, []benchOp{
		{"fuse.memfs", "open+read+close go-fuse memfs (1s cache)", bench.OpenReadClose(mem1), "", 0},
		{"fuse.read", "open+read+close " + benchFile, bench.OpenReadClose(file), "fuse.memfs", 2},
		{"fuse.memfs0", "open+read+close go-fuse memfs (no cache)", bench.OpenReadClose(mem0), "", 0},
		{"fuse.help", "open+read+close help (generated, direct I/O)", bench.OpenReadClose(filepath.Join(mnt, "help")), "fuse.memfs0", 0},
		{"fuse.tmpfs", "open+read+close tmpfs", bench.OpenReadClose(tmp), "", 0},
		{"fuse.memstat", "stat go-fuse memfs (1s cache)", bench.Stat(mem1), "", 0},
		{"fuse.stat", "stat " + benchFile, bench.Stat(file), "fuse.memstat", 0},
		{"fuse.tmpstat", "stat tmpfs", bench.Stat(tmp), "", 0},
	})
}

func memfs(b *benchEnv, name string, timeout time.Duration) (string, error) {
	dir := filepath.Join(b.dir, name)
	if err := os.Mkdir(dir, 0700); err != nil {
		return "", err
	}
	m, err := fusebridge.BenchMemFS(dir, []byte(benchContent), timeout)
	if err != nil {
		return "", err
	}
	b.onClose(func() { m.Unmount() })
	return m.Path, nil
}
