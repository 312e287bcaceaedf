package fusebridge

import (
	"context"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
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
	// created by this open: a failed write or commit may have removed
	// the file again (a/x.json that never became valid).
	created bool

	// mu guards fid and sess. After a reconnect the fid is stale, and the
	// next request opens the file again (without OTRUNC); so does the
	// first read of a handle openCached made without a fid. openMu
	// serializes those opens.
	mu     sync.Mutex
	openMu sync.Mutex
	fid    *client.Fid
	sess   *session
	// wrote is the session of the writes made since the last commit, nil
	// if there were none, and writers the processes that made them: the
	// next Flush by one of them commits them (see Flush).
	wrote   *session
	writers []uint32
	// appendAt is where the next O_APPEND write goes, once the first has
	// asked the server (-1 before): a file rewritten at the commit still
	// has its old length until then.
	appendAt int64
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
	h := &handle{n: n, mode: openMode(flags) &^ plan9.OTRUNC, append: flags&syscall.O_APPEND != 0, appendAt: -1}
	if err := h.open(ctx, openMode(flags)); err != nil {
		return nil, 0, n.b.errno("open", n.path(), err)
	}
	flags = n.cacheFlags(h.fid.Qid())
	h.paged = flags&fuse.FOPEN_DIRECT_IO == 0
	return h, flags | noFlush(h.mode), 0
}

// noFlush spares close(2) the round trip to us (kernels 5.16 and later)
// for an open that cannot write: only writes have a commit to wait for.
func noFlush(mode uint8) uint32 {
	if mode&3 == plan9.OREAD || mode&3 == plan9.OEXEC {
		return fuse.FOPEN_NOFLUSH
	}
	return 0
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
	if s != nil && !s.dead() && h.n.b.current(s) {
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

// Write is one or more Twrites, sent now; their error is the write's,
// even after some of them were taken: the server checks a message as it
// arrives (NAMESPACE rule 1), and a short count without an error would
// only make the writer send the rest.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	// An open for writing is never opened again after a reconnect: what
	// it wrote, or its O_TRUNC, went with the old connection, and the
	// rest of the message, or of the new content, must not land alone.
	h.noteWriter(ctx)
	f := h.live()
	if f == nil {
		return 0, h.n.b.errno("write", h.n.path(), errLost)
	}
	var err error
	if h.append && f.Qid().Type&plan9.QTAPPEND == 0 {
		// The kernel's idea of the end may be stale; the server's is not.
		// (An append-only file appends wherever we write.)
		if off, err = h.appendOffset(ctx, f); err != nil {
			return 0, h.n.b.errno("write", h.n.path(), err)
		}
	}
	n, err := f.WriteAt(ctx, data, off)
	if h.append {
		h.mu.Lock()
		h.appendAt = off + int64(n)
		h.mu.Unlock()
	}
	if err != nil {
		h.gone()
		return 0, h.n.b.errno("write", h.n.path(), err)
	}
	return uint32(n), 0
}

// gone tells the kernel to look up again the name of a file this open
// created, after a failure that may have removed it: else it would serve
// the name from its cache, and the next open by it fail.
func (h *handle) gone() {
	if !h.created {
		return
	}
	if name, parent := h.n.Parent(); parent != nil {
		parent.NotifyEntry(name)
	}
}

// noteWriter records that the caller writes, so that its close commits
// (or, if the write fails, reports that nothing was kept).
func (h *handle) noteWriter(ctx context.Context) {
	who := caller(ctx)
	h.mu.Lock()
	h.wrote = h.sess
	if !slices.Contains(h.writers, who) {
		h.writers = append(h.writers, who)
	}
	h.mu.Unlock()
}

// errLost: the daemon's end of an open is gone, with what it held.
var errLost = errs.E(errs.Other, "connection to the daemon lost: this open's writes since its last close were not kept; open the file again")

// appendOffset returns where an O_APPEND write goes: the server's length
// at the first, then the end of the last (which the server's stat shows
// only after the commit, for a file rewritten whole).
func (h *handle) appendOffset(ctx context.Context, f *client.Fid) (int64, error) {
	h.mu.Lock()
	at := h.appendAt
	h.mu.Unlock()
	if at >= 0 {
		return at, nil
	}
	d, err := f.Stat(ctx)
	if err != nil {
		return 0, err
	}
	return int64(d.Length), nil
}

// Flush is close(2) of a descriptor: it commits what was written since
// the last commit, as a null wstat (the 9P fsync) on the open fid, and
// its error is the close's (NAMESPACE rule 1). The fid stays open: the
// kernel flushes at every close of every descriptor of the open (dup,
// dup2, a shell's redirection of a builtin, the exit of a child that
// inherited it, the exec of one that had it close-on-exec), and only the
// last one is followed by Release.
//
// So a close commits only if its process is one that wrote since the
// last commit: `exec 3>prompt; echo a >&3; echo b >&3; exec 3>&-` sends
// two prompts, a and b (bash closes its dup of 3 after each echo), and
// the final close sends nothing; a child forked while a message is half
// written (a Go program's os/exec, a shell's ls) closes its copy without
// cutting the message; `(printf x >&3)` commits x when that child exits.
// A close with nothing written since the last commit is answered here,
// without a round trip.
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	who := caller(ctx)
	h.mu.Lock()
	wrote, f, s := h.wrote, h.fid, h.sess
	if wrote == nil || who != 0 && !slices.Contains(h.writers, who) && !slices.Contains(h.writers, 0) {
		h.mu.Unlock()
		return 0
	}
	h.wrote, h.writers = nil, h.writers[:0]
	h.mu.Unlock()
	if f == nil || s != wrote || s.dead() || !h.n.b.current(s) {
		return h.n.b.errno("close", h.n.path(), errLost)
	}
	err := f.Sync(ctx)
	if err != nil {
		h.gone()
	}
	return h.n.b.errno("close", h.n.path(), err)
}

// Release clunks the fid. Every writer's close(2) was a Flush that
// committed, so there is mostly nothing left to wait for, and nobody
// would hear an error (close(2) has returned): the clunk is not waited
// for. Writes no Flush committed (a descriptor passed to another process
// that closed it last) are committed by the clunk, their error logged.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	f, s, pending := h.fid, h.sess, h.wrote != nil
	h.fid, h.wrote = nil, nil
	h.mu.Unlock()
	switch {
	case f == nil || s.dead():
	case pending:
		h.n.b.errno("release", h.n.path(), f.Clunk(context.Background()))
	default:
		go f.Clunk(context.Background())
	}
	return 0
}

// caller returns the process (thread group) a request comes from, 0 if
// unknown: the kernel names the thread, and a process's threads share its
// descriptors.
func caller(ctx context.Context) uint32 {
	c, ok := ctx.(*fuse.Context)
	if !ok || c.Caller.Pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(c.Caller.Pid), 10) + "/status")
	if err != nil {
		return c.Caller.Pid
	}
	_, rest, ok := strings.Cut(string(b), "\nTgid:")
	if !ok {
		return c.Caller.Pid
	}
	line, _, _ := strings.Cut(rest, "\n")
	tgid, err := strconv.ParseUint(strings.TrimSpace(line), 10, 32)
	if err != nil {
		return c.Caller.Pid
	}
	return uint32(tgid)
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
	h := &handle{mode: omode, append: flags&syscall.O_APPEND != 0, fid: f, sess: s, appendAt: -1, created: true}
	ch := n.newChild(ctx, name, d, nil, nil)
	h.n = ch.Operations().(*node)
	// A new file is empty, so plain it is not: direct I/O, no cache.
	return ch, h, h.n.cacheFlags(f.Qid()) | noFlush(omode), 0
}
