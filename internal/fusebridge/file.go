package fusebridge

import (
	"context"
	"io"
	"sync"
	"syscall"

	"9fans.net/go/plan9"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// handle is an open file: a 9P fid opened with the file's open mode.
type handle struct {
	n      *node
	mode   uint8 // 9P open mode, without OTRUNC
	append bool  // O_APPEND: write at the end, whatever the kernel thinks it is
	// paged: the kernel reads through its page cache, and takes a short
	// read for the end of the file (and shrinks the file to it).
	paged bool

	// mu guards fid and sess. After a reconnect the fid is stale, and the
	// next request opens the file again (without OTRUNC); so does the
	// first read of a handle openCached made without a fid. openMu
	// serializes those opens.
	mu     sync.Mutex
	openMu sync.Mutex
	fid    *client.Fid
	sess   *session
}

var (
	_ fs.FileReader   = (*handle)(nil)
	_ fs.FileWriter   = (*handle)(nil)
	_ fs.FileFlusher  = (*handle)(nil)
	_ fs.FileReleaser = (*handle)(nil)
)

// openMode converts open(2) flags to a 9P open mode.
func openMode(flags uint32) uint8 {
	var mode uint8
	switch flags & syscall.O_ACCMODE {
	case syscall.O_RDONLY:
		mode = plan9.OREAD
	case syscall.O_WRONLY:
		mode = plan9.OWRITE
	default:
		mode = plan9.ORDWR
	}
	if flags&syscall.O_TRUNC != 0 {
		mode |= plan9.OTRUNC
	}
	return mode
}

// Open opens a spare fid of the node (see fids.go), or, to read a plain
// file, may only stat it (see openCached).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if h, fl, ok := n.openCached(ctx, flags); ok {
		return h, fl | fuse.FOPEN_NOFLUSH, 0
	}
	h := &handle{n: n, mode: openMode(flags) &^ plan9.OTRUNC, append: flags&syscall.O_APPEND != 0}
	if err := h.open(ctx, openMode(flags)); err != nil {
		return nil, 0, n.b.errno("open", n.path(), err)
	}
	flags = n.cacheFlags(h.fid.Qid())
	h.paged = flags&fuse.FOPEN_DIRECT_IO == 0
	return h, flags | fuse.FOPEN_NOFLUSH, 0
}

// open (re)establishes h.fid with mode.
func (h *handle) open(ctx context.Context, mode uint8) error {
	_, err := twice(func() (struct{}, error) { return struct{}{}, h.open1(ctx, mode) })
	return err
}

func (h *handle) open1(ctx context.Context, mode uint8) error {
	return h.n.withFid(ctx, func(nf *client.Fid, s *session) error {
		f, err := h.n.openable(ctx, nf, s)
		if err != nil {
			return err
		}
		if err := f.Open(ctx, mode); err != nil {
			f.Clunk(ctx)
			return err
		}
		h.mu.Lock()
		h.fid, h.sess = f, s
		h.mu.Unlock()
		return nil
	})
}

// live returns the open fid if it belongs to the current connection.
func (h *handle) live() *client.Fid {
	h.mu.Lock()
	f, s := h.fid, h.sess
	h.mu.Unlock()
	if cur := h.n.b.cur.Load(); s != nil && !s.dead() && (s == cur || s.via == cur) {
		return f
	}
	return nil
}

// lazy reports whether the handle has not opened its file yet (see
// openCached): fstat then stats the node, rather than opening the file
// only to stat it.
func (h *handle) lazy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sess == nil
}

// opened returns the open fid, opening the file again if the connection
// was re-established since.
func (h *handle) opened(ctx context.Context) (*client.Fid, error) {
	if f := h.live(); f != nil {
		return f, nil
	}
	// One open at a time: two reads racing to open would leave a fid
	// that nothing clunks.
	h.openMu.Lock()
	defer h.openMu.Unlock()
	if f := h.live(); f != nil {
		return f, nil
	}
	if err := h.open(ctx, h.mode); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fid, nil
}

// Read is one Tread on a direct-I/O file: a short read is passed on as
// such, so streams and blocking files behave as they do on Plan 9. A file
// read through the page cache is read until dest is full or a Tread comes
// back short, since there a short read means the end of the file.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f, err := h.opened(ctx)
	if err != nil {
		return nil, h.n.b.errno("read", h.n.path(), err)
	}
	read := f.Read
	if h.paged {
		read = func(ctx context.Context, p []byte, off int64) (int, error) { return readPaged(ctx, f, p, off) }
	}
	n, err := read(ctx, dest, off)
	if err != nil && err != io.EOF {
		return nil, h.n.b.errno("read", h.n.path(), err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Write is one or more Twrites, sent now; their error is the write's.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f, err := h.opened(ctx)
	if err != nil {
		return 0, h.n.b.errno("write", h.n.path(), err)
	}
	if h.append && f.Qid().Type&plan9.QTAPPEND == 0 {
		// The kernel's idea of the end may be stale; the server's is not.
		// (An append-only file appends wherever we write.)
		d, err := f.Stat(ctx)
		if err != nil {
			return 0, h.n.b.errno("write", h.n.path(), err)
		}
		off = int64(d.Length)
	}
	n, err := f.WriteAt(ctx, data, off)
	if err != nil && n == 0 {
		return 0, h.n.b.errno("write", h.n.path(), err)
	}
	return uint32(n), 0
}

// Flush (close(2)) has nothing to do: writes were never deferred. Every
// open says FOPEN_NOFLUSH, so a kernel that knows it (5.16 and later)
// spares close(2) the round trip to us.
func (h *handle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Release clunks the fid. Nothing waits for a release (close(2) returned
// at Flush), and a clunk cannot fail in a way anyone could act on, so it is
// not waited for either.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	f, s := h.fid, h.sess
	h.fid = nil
	h.mu.Unlock()
	if f != nil && !s.dead() {
		go f.Clunk(context.Background())
	}
	return 0
}

// Create creates and opens name in the directory n.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	omode := openMode(flags) &^ plan9.OTRUNC
	var f *client.Fid
	var s *session
	err := n.withFid(ctx, func(pf *client.Fid, ps *session) error {
		nf, err := pf.Walk(ctx)
		if err != nil {
			return err
		}
		if err := nf.Create(ctx, name, plan9.Perm(mode&0777), omode); err != nil {
			nf.Clunk(ctx)
			return err
		}
		f, s = nf, ps
		return nil
	})
	if err != nil {
		if errs.Is(err, errs.Exist) && flags&syscall.O_EXCL == 0 {
			return nil, nil, 0, syscall.EEXIST
		}
		return nil, nil, 0, n.b.errno("create", join(n.path(), name), err)
	}
	d := &plan9.Dir{Qid: f.Qid(), Mode: plan9.Perm(mode & 0777), Name: name}
	if st, err := f.Stat(ctx); err == nil {
		d = st
	}
	n.b.fillEntry(d, out)
	h := &handle{mode: omode, append: flags&syscall.O_APPEND != 0, fid: f, sess: s}
	ch := n.newChild(ctx, name, d, nil, nil)
	h.n = ch.Operations().(*node)
	// A new file is empty, so plain it is not: direct I/O, no cache.
	return ch, h, h.n.cacheFlags(f.Qid()) | fuse.FOPEN_NOFLUSH, 0
}
