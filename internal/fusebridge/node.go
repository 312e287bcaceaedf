package fusebridge

import (
	"context"
	"runtime"
	"sync"
	"syscall"
	"time"

	"9fans.net/go/plan9"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// node is a file or directory of the mounted tree.
type node struct {
	fs.Inode
	b *bridge

	// mu guards fid, spare and sess: a walked, never-opened fid for this
	// node (nil until first needed), a clone of it ready to be opened
	// (see fids.go), and the session they belong to.
	mu    sync.Mutex
	fid   *client.Fid
	spare *client.Fid
	sess  *session

	// Also guarded by mu: what the kernel may have cached. attrVers is
	// the Qid.Vers of the attributes last given to the kernel, pageVers
	// that of the content in its page cache (valid if pageOK).
	plain    bool
	attrVers uint32
	pageVers uint32
	pageOK   bool
}

var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeOnForgetter    = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
)

// path returns the node's slash-separated path from the root of the tree.
func (n *node) path() string { return n.Path(n.Root()) }

// newChild returns the inode for the file with directory entry d, called
// name in n. go-fuse keeps one inode per inode number, but picks the one
// it has only after Lookup returns, dropping a new node made meanwhile:
// the stat (for caching) and the fresh fid f would reach a node nobody
// uses. So a node that is already n's child by that name is updated and
// returned instead. f, if not nil, is a fid for the file in session s.
func (n *node) newChild(ctx context.Context, name string, d *plan9.Dir, f *client.Fid, s *session) *fs.Inode {
	ino := qidIno(d.Qid)
	if ch := n.GetChild(name); ch != nil && ch.StableAttr().Ino == ino && ch.StableAttr().Mode == fileType(d) {
		if cn, ok := ch.Operations().(*node); ok {
			if f != nil {
				cn.replaceFid(f, s)
			}
			cn.noteStat(d)
			return ch
		}
	}
	child := &node{b: n.b, fid: f, sess: s}
	child.noteStat(d)
	if f != nil {
		// A file renamed behind the mount's back is known under another
		// name: go-fuse drops this node for the one it has. Its fid is
		// then clunked when the node is collected (a fid the node clunked
		// itself, at forget or replacement, is not clunked twice).
		runtime.AddCleanup(child, func(f *client.Fid) { go f.Clunk(context.Background()) }, f)
	}
	return n.NewInode(ctx, child, fs.StableAttr{Mode: fileType(d), Ino: ino})
}

// plain reports whether a file's content may be cached by the kernel: it
// has a length, is not append-only, and is stored rather than made at
// open (DMTMP in its mode, tree.Synthesized): the length of a synthesized file is
// true when stated, but the next open may read more, and a page-cached
// read would stop at the size the kernel holds.
func (b *bridge) plain(d *plan9.Dir) bool {
	return b.opts.CacheTimeout > 0 && d.Qid.Type&(plan9.QTDIR|plan9.QTAPPEND) == 0 && d.Mode&plan9.DMTMP == 0 && d.Length > 0
}

// attrTimeout is how long the kernel may keep d.
func (b *bridge) attrTimeout(d *plan9.Dir) time.Duration {
	if b.plain(d) {
		return b.opts.CacheTimeout
	}
	return b.opts.AttrTimeout
}

// noteStat records that the kernel was given d.
func (n *node) noteStat(d *plan9.Dir) {
	n.mu.Lock()
	n.plain = n.b.plain(d)
	n.attrVers = d.Qid.Vers
	n.mu.Unlock()
}

// Lookup walks to name and stats it.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	type found struct {
		ino *fs.Inode
		eno syscall.Errno
	}
	r, _ := twice(func() (found, error) {
		ino, eno, err := n.lookup(ctx, name, out)
		return found{ino, eno}, err
	})
	return r.ino, r.eno
}

// lookup returns the error too, so a dead connection can be retried.
func (n *node) lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno, error) {
	var ino *fs.Inode
	err := n.withOwnFid(ctx, func(pf *client.Fid, s *session) error {
		f, err := pf.Walk(ctx, name)
		if err != nil {
			return err
		}
		d, err := f.Stat(ctx)
		if err != nil {
			f.Clunk(ctx)
			return err
		}
		n.b.fillEntry(d, out)
		ino = n.newChild(ctx, name, d, f, s)
		return nil
	})
	if err != nil {
		return nil, n.b.errno("walk", join(n.path(), name), err), err
	}
	return ino, 0, nil
}

// Getattr stats the open file if there is one, else the node.
func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d, err := n.stat(ctx, fh)
	if err != nil {
		return n.b.errno("stat", n.path(), err)
	}
	n.b.fillAttr(d, &out.Attr)
	out.SetTimeout(n.b.attrTimeout(d))
	n.noteStat(d)
	return 0
}

func (n *node) stat(ctx context.Context, fh fs.FileHandle) (*plan9.Dir, error) {
	return twice(func() (*plan9.Dir, error) { return n.stat1(ctx, fh) })
}

func (n *node) stat1(ctx context.Context, fh fs.FileHandle) (*plan9.Dir, error) {
	if h, ok := fh.(*handle); ok && !h.lazy() {
		if f, err := h.opened(ctx); err == nil {
			// An open file renamed since no longer stats by its old
			// name; its node knows the new one.
			if d, err := f.Stat(ctx); !errs.Is(err, errs.NotExist) {
				return d, err
			}
		}
	}
	var d *plan9.Dir
	err := n.withOwnFid(ctx, func(f *client.Fid, _ *session) (err error) {
		d, err = f.Stat(ctx)
		return err
	})
	return d, err
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// fillAttr converts a 9P directory entry. 9P owners are names, not
// numbers, so every file belongs to the user who mounted the tree.
func (b *bridge) fillAttr(d *plan9.Dir, a *fuse.Attr) {
	a.Ino = qidIno(d.Qid)
	a.Mode = fileType(d) | uint32(d.Mode&0777)
	a.Size = d.Length
	a.Blocks = (d.Length + 511) / 512
	a.Blksize = 4096
	a.Nlink = 1
	if d.Qid.Type&plan9.QTDIR != 0 {
		a.Nlink = 2
	}
	a.Mtime = uint64(d.Mtime)
	a.Atime = uint64(d.Atime)
	a.Ctime = uint64(d.Mtime)
	a.Owner = fuse.Owner{Uid: uint32(syscall.Getuid()), Gid: uint32(syscall.Getgid())}
}

func (b *bridge) fillEntry(d *plan9.Dir, out *fuse.EntryOut) {
	b.fillAttr(d, &out.Attr)
	out.SetEntryTimeout(b.opts.EntryTimeout)
	out.SetAttrTimeout(b.attrTimeout(d))
}

func fileType(d *plan9.Dir) uint32 {
	if d.Qid.Type&plan9.QTDIR != 0 {
		return syscall.S_IFDIR
	}
	return syscall.S_IFREG
}
