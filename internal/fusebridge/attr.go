package fusebridge

import (
	"context"
	"syscall"
	"time"

	"9fans.net/go/plan9"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// Statfs reports an empty, roomy file system so that tools which check
// for free space (cp, editors) go ahead.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize = 4096
	out.Frsize = 4096
	out.Blocks = 1 << 30
	out.Bfree = 1 << 30
	out.Bavail = 1 << 30
	out.Files = 1 << 20
	out.Ffree = 1 << 20
	out.NameLen = 255
	return 0
}

// Setattr maps truncate to a wstat of the length, chmod and utimes to
// wstats of mode and mtime. Files that refuse a mode or time change (most
// synthetic ones) are left alone rather than failing cp -p, touch or
// sed -i; a refused length change is an error, since data would be wrong.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var d plan9.Dir
	d.Null()
	if mode, ok := in.GetMode(); ok {
		d.Mode = plan9.Perm(mode & 0777)
		if n.IsDir() {
			d.Mode |= plan9.DMDIR
		}
	}
	if mtime, ok := in.GetMTime(); ok {
		d.Mtime = uint32(mtime.Unix())
	}
	size, truncate := in.GetSize()
	if h, ok := fh.(*handle); ok && truncate {
		// ftruncate: the open file serves it (a validated file
		// truncates its pending content, not the file on disk).
		f, err := h.opened(ctx)
		if err == nil {
			err = n.truncate(ctx, f, size)
		}
		if err != nil {
			return n.b.errno("truncate", n.path(), err)
		}
		truncate = false
	}
	err := n.withFid(ctx, func(f *client.Fid, _ *session) error {
		if truncate {
			if err := n.truncate(ctx, f, size); err != nil {
				return err
			}
		}
		if d.IsNull() {
			return nil
		}
		if err := f.Wstat(ctx, &d); err != nil && !ignorable(err) {
			return err
		}
		return nil
	})
	if err != nil {
		return n.b.errno("wstat", n.path(), err)
	}
	return n.Getattr(ctx, fh, out)
}

// truncate sets the length, tolerating a no-op on files that cannot
// change length: `echo x > ctl` truncates a synthetic file of length 0,
// and `echo model=x > cfg` a synthesized one whose content a write
// replaces (its length is what a read would return, not stored bytes).
func (n *node) truncate(ctx context.Context, f *client.Fid, size uint64) error {
	var d plan9.Dir
	d.Null()
	d.Length = size
	err := f.Wstat(ctx, &d)
	if err != nil && ignorable(err) {
		if st, serr := f.Stat(ctx); serr == nil && (st.Length == size || size == 0 && st.Mode&plan9.DMTMP != 0) {
			return nil
		}
	}
	return err
}

// ignorable reports whether a refused wstat is one to shrug off.
func ignorable(err error) bool {
	switch errs.KindOf(err) {
	case errs.Permission, errs.Unsupported:
		return true
	}
	return false
}

// Fsync asks the server to commit the file (a null wstat).
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	var f *client.Fid
	var err error
	if h, ok := fh.(*handle); ok {
		f, err = h.opened(ctx)
		if err == nil {
			err = f.Sync(ctx)
		}
	} else {
		err = n.withOwnFid(ctx, func(f *client.Fid, _ *session) error { return f.Sync(ctx) })
	}
	return n.b.errno("fsync", n.path(), err)
}

// timeout returns d as go-fuse wants it.
func timeout(d time.Duration) *time.Duration { return &d }
