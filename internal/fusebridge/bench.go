package fusebridge

import (
	"context"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/errs"
)

// BenchResult is the mean wall time of the file operations `ollie bench`
// reports for one file.
type BenchResult struct {
	OpenReadClose time.Duration // open(2), read(2) to EOF, close(2)
	Stat          time.Duration // stat(2)
}

// BenchFile measures operations on the file at path, n times each. Run it
// on a file in a mount, on tmpfs, and on BenchMemFS to compare.
func BenchFile(path string, n int) (BenchResult, error) {
	var r BenchResult
	buf := make([]byte, 64*1024)
	start := time.Now()
	for range n {
		f, err := os.Open(path)
		if err != nil {
			return r, err
		}
		for {
			_, err := f.Read(buf)
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return r, err
			}
		}
		f.Close()
	}
	r.OpenReadClose = time.Since(start) / time.Duration(n)
	var st syscall.Stat_t
	start = time.Now()
	for range n {
		if err := syscall.Stat(path, &st); err != nil {
			return r, &os.PathError{Op: "stat", Path: path, Err: err}
		}
	}
	r.Stat = time.Since(start) / time.Duration(n)
	return r, nil
}

// MemFS is a go-fuse in-memory file system holding one file, "file": the
// floor for any FUSE file system written in Go.
type MemFS struct {
	srv  *fuse.Server
	Path string // the file's path
}

// BenchMemFS mounts a MemFS on dir with the given attribute and entry
// timeouts, and a file of the given content.
func BenchMemFS(dir string, content []byte, timeout time.Duration) (*MemFS, error) {
	root := &fs.Inode{}
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, FsName: "memfs", DisableXAttrs: true},
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		OnAdd: func(ctx context.Context) {
			f := root.NewPersistentInode(ctx, &fs.MemRegularFile{
				Data: content,
				Attr: fuse.Attr{Mode: 0644},
			}, fs.StableAttr{})
			root.AddChild("file", f, false)
		},
	}
	srv, err := fs.Mount(dir, root, opts)
	if err != nil {
		return nil, errs.E(errs.Unavailable, "mount "+dir, err)
	}
	return &MemFS{srv: srv, Path: dir + "/file"}, nil
}

// Unmount unmounts the MemFS.
func (m *MemFS) Unmount() error { return m.srv.Unmount() }
