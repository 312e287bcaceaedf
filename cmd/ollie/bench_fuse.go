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
// tmpfs (no FUSE at all). A helper process makes the system calls.
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
	rows := []benchRow{
		{key: "fuse.memfs", op: "open+read+close go-fuse memfs (1s cache)"},
		{key: "fuse.read", op: "open+read+close " + benchFile, ref: "fuse.memfs", goal: 2},
		{key: "fuse.memfs0", op: "open+read+close go-fuse memfs (no cache)"},
		{key: "fuse.help", op: "open+read+close help (generated, direct I/O)", ref: "fuse.memfs0"},
		{key: "fuse.tmpfs", op: "open+read+close tmpfs"},
		{key: "fuse.memstat", op: "stat go-fuse memfs (1s cache)"},
		{key: "fuse.stat", op: "stat " + benchFile, ref: "fuse.memstat"},
		{key: "fuse.tmpstat", op: "stat tmpfs"},
	}
	sts, err := b.measureFiles([]fileOp{
		{"read", mem1}, {"read", file}, {"read", mem0}, {"read", filepath.Join(mnt, "help")},
		{"read", tmp}, {"stat", mem1}, {"stat", file}, {"stat", tmp},
	})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].stats = sts[i]
	}
	return rows, nil
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
