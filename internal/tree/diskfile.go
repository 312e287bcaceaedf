package tree

import (
	"context"
	"os"
	"path"
	"strconv"
	"syscall"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// DiskFile is a regular file of an on-disk directory.
type DiskFile struct {
	dir  *DiskDir
	rel  string
	name string
}

func (f *DiskFile) Stat() (plan9.Dir, error) {
	fi, err := f.dir.root.Stat(f.rel)
	if err != nil {
		return plan9.Dir{}, diskErr(f.name, err)
	}
	return f.dir.fs.diskStat(f.name, fi, f.dir.pol), nil
}

func (f *DiskFile) Open(ctx context.Context, mode uint8) (Handle, error) {
	pol := f.dir.pol
	write := mode&3 == plan9.OWRITE || mode&3 == plan9.ORDWR || mode&plan9.OTRUNC != 0
	if write && !pol.Write {
		return nil, errs.E(errs.Permission, f.name+" is read-only")
	}
	flag := os.O_RDONLY
	switch mode & 3 {
	case plan9.OWRITE:
		flag = os.O_WRONLY
	case plan9.ORDWR:
		flag = os.O_RDWR
	}
	rewrite := write && (pol.Atomic || pol.Validate != nil)
	if mode&plan9.OTRUNC != 0 && !rewrite {
		flag |= os.O_TRUNC
	}
	if rewrite {
		flag = os.O_RDONLY // the handle reads the content; the commit replaces the file
	}
	fh, err := f.dir.root.OpenFile(f.rel, flag, 0)
	if err != nil {
		return nil, diskErr(f.name, err)
	}
	return f.handle(fh, mode, false)
}

// handle makes the handle of an open (or a create) whose file is fh.
func (f *DiskFile) handle(fh *os.File, mode uint8, created bool) (Handle, error) {
	pol := f.dir.pol
	write := mode&3 == plan9.OWRITE || mode&3 == plan9.ORDWR || mode&plan9.OTRUNC != 0
	if write && (pol.Atomic || pol.Validate != nil) {
		return f.rewriter(fh, mode&plan9.OTRUNC != 0, created)
	}
	return &diskHandle{f: fh, sync: pol.Sync}, nil
}

func (f *DiskFile) Remove(ctx context.Context) error {
	if !f.dir.pol.Remove {
		return errs.E(errs.Permission, "cannot remove files in "+f.dir.name)
	}
	if err := f.dir.root.Remove(f.rel); err != nil {
		return diskErr(f.name, err)
	}
	f.dir.syncDir()
	f.dir.pol.changed()
	return nil
}

func (f *DiskFile) Wstat(ctx context.Context, d *plan9.Dir) error {
	pol := f.dir.pol
	if d.Length != ^uint64(0) {
		if !pol.Write {
			return errs.E(errs.Permission, f.name+" is read-only")
		}
		if pol.Validate != nil {
			return errs.E(errs.Invalid, f.name+": truncate an open file, or write new content")
		}
		fh, err := f.dir.root.OpenFile(f.rel, os.O_WRONLY, 0)
		if err != nil {
			return diskErr(f.name, err)
		}
		err = fh.Truncate(int64(d.Length))
		if err == nil && pol.Sync {
			err = fh.Sync()
		}
		fh.Close()
		if err != nil {
			return diskErr(f.name, err)
		}
	}
	if d.Mode != ^plan9.Perm(0) {
		if !pol.Write {
			return errs.E(errs.Permission, f.name+" is read-only")
		}
		if err := f.dir.root.Chmod(f.rel, os.FileMode(d.Mode&0777)); err != nil {
			return diskErr(f.name, err)
		}
	}
	if d.Mtime != ^uint32(0) && pol.Write {
		t := time.Unix(int64(d.Mtime), 0)
		if err := f.dir.root.Chtimes(f.rel, t, t); err != nil {
			return diskErr(f.name, err)
		}
	}
	if d.Name != "" && d.Name != f.name {
		return f.parent().rename(f.rel, d.Name)
	}
	return nil
}

func (f *DiskFile) parent() *DiskDir {
	rel := path.Dir(f.rel)
	if rel == "." {
		return &DiskDir{fs: f.dir.fs, root: f.dir.root, rel: ".", name: f.dir.name, pol: f.dir.pol}
	}
	return &DiskDir{fs: f.dir.fs, root: f.dir.root, rel: rel, name: path.Base(rel), pol: f.dir.pol}
}

// diskHandle is an open plain disk file. Each write is on disk (and with
// Sync, fsync'd) before it is acknowledged.
type diskHandle struct {
	f    *os.File
	sync bool
}

// ReadAt is one pread: a 9P read may return less than asked, and
// os.File.ReadAt would make a second pread to learn of the end of a small
// file.
func (h *diskHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	n, err := pread(h.f, p, off)
	if err != nil {
		return 0, diskErr(path.Base(h.f.Name()), err)
	}
	return n, nil
}

// pread reads once at off, through the file's raw connection so that a
// concurrent Close cannot recycle the descriptor under the read.
func pread(f *os.File, p []byte, off int64) (n int, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	cerr := rc.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Pread(int(fd), p, off)
			if err != syscall.EINTR {
				return true
			}
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	return max(n, 0), err
}

func (h *diskHandle) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	n, err := h.f.WriteAt(p, off)
	if err == nil && h.sync {
		err = h.f.Sync()
	}
	if err != nil {
		return n, diskErr(path.Base(h.f.Name()), err)
	}
	return n, nil
}

// Truncate serves a wstat of length on the open file.
func (h *diskHandle) Truncate(size int64) error {
	err := h.f.Truncate(size)
	if err == nil && h.sync {
		err = h.f.Sync()
	}
	return err
}

func (h *diskHandle) Close() error { return h.f.Close() }

// Sync makes the file durable (a null wstat: the 9P fsync).
func (h *diskHandle) Sync() error { return h.f.Sync() }

// validName reports whether name may be created: the names rule of
// NAMESPACE.md, at most 255 bytes.
func validName(name string) bool { return config.ValidNameLen(name, 255) }

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
