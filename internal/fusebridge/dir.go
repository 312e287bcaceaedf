package fusebridge

import (
	"context"
	"syscall"

	"9fans.net/go/plan9"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// dirHandle is an open directory: the entries read at opendir, so that
// readdirplus (ls -l) needs no walk or stat per entry.
type dirHandle struct {
	n    *node
	dirs []*plan9.Dir
	next int
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileLookuper     = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
)

// OpendirHandle reads the whole directory with one open fid.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	dirs, err := n.readDir(ctx)
	if err != nil {
		return nil, 0, n.b.errno("readdir", n.path(), err)
	}
	return &dirHandle{n: n, dirs: dirs}, 0, 0
}

func (n *node) readDir(ctx context.Context) ([]*plan9.Dir, error) {
	return twice(func() ([]*plan9.Dir, error) { return n.readDir1(ctx) })
}

func (n *node) readDir1(ctx context.Context) ([]*plan9.Dir, error) {
	var dirs []*plan9.Dir
	err := n.withFid(ctx, func(nf *client.Fid, s *session) error {
		f, err := n.openable(ctx, nf, s)
		if err != nil {
			return err
		}
		defer clunk(s, f)
		if err := f.Open(ctx, plan9.OREAD); err != nil {
			return err
		}
		dirs, err = f.DirreadAll(ctx)
		return err
	})
	return dirs, err
}

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if h.next >= len(h.dirs) {
		return nil, 0
	}
	d := h.dirs[h.next]
	h.next++
	return &fuse.DirEntry{Name: d.Name, Ino: qidIno(d.Qid), Mode: fileType(d), Off: uint64(h.next)}, 0
}

// Seekdir supports rewinddir and telldir/seekdir over the snapshot.
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	h.next = int(min(off, uint64(len(h.dirs))))
	return 0
}

// Lookup answers readdirplus from the snapshot.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	for _, d := range h.dirs {
		if d.Name == name {
			h.n.b.fillEntry(d, out)
			return h.n.newChild(ctx, name, d, nil, nil), 0
		}
	}
	return h.n.Lookup(ctx, name, out)
}

// Mkdir creates a directory. The fid that created it is open, and an open
// fid cannot be walked from, so the new node gets its own fid lazily.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := join(n.path(), name)
	var d *plan9.Dir
	err := n.withFid(ctx, func(pf *client.Fid, _ *session) error {
		f, err := pf.Walk(ctx)
		if err != nil {
			return err
		}
		defer f.Clunk(ctx)
		if err := f.Create(ctx, name, plan9.DMDIR|plan9.Perm(mode&0777), plan9.OREAD); err != nil {
			return err
		}
		if d, err = f.Stat(ctx); err != nil {
			d = &plan9.Dir{Qid: f.Qid(), Mode: plan9.DMDIR | plan9.Perm(mode&0777), Name: name}
		}
		return nil
	})
	if err != nil {
		return nil, n.b.errno("mkdir", p, err)
	}
	n.b.fillEntry(d, out)
	return n.newChild(ctx, name, d, nil, nil), 0
}

// child walks to name in n; the caller clunks the fid unless it removes it.
func (n *node) child(ctx context.Context, name string) (*client.Fid, error) {
	var f *client.Fid
	err := n.withFid(ctx, func(pf *client.Fid, _ *session) (err error) {
		f, err = pf.Walk(ctx, name)
		return err
	})
	return f, err
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, "unlink", name, false)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, "rmdir", name, true)
}

// remove checks the kind of file first, since 9P's Tremove takes either.
func (n *node) remove(ctx context.Context, op, name string, dir bool) syscall.Errno {
	p := join(n.path(), name)
	f, err := n.child(ctx, name)
	if err != nil {
		return n.b.errno(op, p, err)
	}
	isDir := f.Qid().Type&plan9.QTDIR != 0
	switch {
	case isDir && !dir:
		f.Clunk(ctx)
		return syscall.EISDIR
	case !isDir && dir:
		f.Clunk(ctx)
		return syscall.ENOTDIR
	}
	return n.b.errno(op, p, f.Remove(ctx))
}

// Rename changes the name with a wstat: 9P cannot move a file to another
// directory, so that is EXDEV and mv falls back to copy and remove. A
// rename onto an existing file (sed -i, editors saving) removes the target
// first if the server refuses to replace it.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	p := join(n.path(), name)
	if newParent.EmbeddedInode() != &n.Inode {
		return syscall.EXDEV
	}
	if flags&^renameNoReplace != 0 {
		return syscall.EINVAL
	}
	if name == newName {
		return 0
	}
	f, err := n.child(ctx, name)
	if err != nil {
		return n.b.errno("rename", p, err)
	}
	defer f.Clunk(ctx)
	var d plan9.Dir
	d.Null()
	d.Name = newName
	err = f.Wstat(ctx, &d)
	if errs.Is(err, errs.Exist) && flags&renameNoReplace == 0 {
		t, terr := n.child(ctx, newName)
		if terr != nil {
			return n.b.errno("rename", p, err)
		}
		if (t.Qid().Type&plan9.QTDIR != 0) != (f.Qid().Type&plan9.QTDIR != 0) {
			t.Clunk(ctx)
			return syscall.EISDIR
		}
		if rerr := t.Remove(ctx); rerr != nil {
			return n.b.errno("rename", join(n.path(), newName), rerr)
		}
		err = f.Wstat(ctx, &d)
	}
	if err == nil {
		dropFids(n.GetChild(name))
	}
	eno := n.b.errno("rename", p, err)
	if eno == syscall.EINVAL {
		// A refused name. mv reads EINVAL from rename(2) as "cannot move
		// a directory into itself", which would mislead.
		eno = syscall.EPERM
	}
	return eno
}

// renameNoReplace is renameat2's RENAME_NOREPLACE, which go-fuse does not
// name.
const renameNoReplace = 0x1
