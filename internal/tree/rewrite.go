package tree

import (
	"context"
	"errors"
	"math"
	"os"
	"strconv"
	"sync"

	"ollie.dev/ollie/internal/errs"
)

// rewriteHandle is an open for writing of a file in a directory whose
// files are rewritten whole (DiskPolicy.Atomic: a/ sk/ t/ m/). The open
// takes the content (none with O_TRUNC: the file on disk is not touched);
// writes and truncates edit that copy, and the commit (close, fsync, or
// over FUSE the close(2) of each descriptor) replaces the file
// atomically: temp file, fsync, rename, fsync of the directory. A kill -9
// before the commit leaves the old content; a write past the limit fails
// rather than being cut (NAMESPACE rules 1 and 4).
//
// A commit that only added to the end of the file as it is on disk
// (`echo x >> m/log`) appends in place instead, and fsyncs: the old
// content is never at risk, and `tail -f`, which follows the descriptor,
// sees the new lines (after a rename it would follow a removed file).
//
// With a Validate policy each write is checked against the content it
// would produce: a write that makes the content wrong fails and changes
// nothing; content that is only unfinished (ErrIncomplete) waits for the
// next write, and fails the commit if it is still unfinished then.
type rewriteHandle struct {
	file *DiskFile
	max  int

	mu      sync.Mutex // reads of the fid run while its writes do
	buf     []byte
	dirty   bool // changed since the open or the last commit
	created bool // made by this open: removed again if nothing valid lands
	removed bool // created, then removed by an invalid write
	landed  bool // some content was committed
	// base is the length of the file on disk as of the open or the last
	// commit, and disk its identity then (nil if the open made it); low is
	// the lowest offset changed since (math.MaxInt64 if none).
	base int64
	disk os.FileInfo
	low  int64
	// err: a write failed for its size; the changes since the last
	// commit are void, even the pieces of that write(2) taken before.
	err error
}

// Bounds on the content an open holds: validated documents (agents,
// skills) and everything else (tools, notes).
const (
	maxValidated = 1 << 20
	maxRewritten = 16 << 20
)

func (f *DiskFile) rewriter(fh *os.File, trunc, created bool) (Handle, error) {
	defer fh.Close()
	h := &rewriteHandle{file: f, max: maxRewritten, created: created, dirty: trunc && !created, low: math.MaxInt64}
	if f.dir.pol.Validate != nil {
		h.max = maxValidated
	}
	fi, err := fh.Stat()
	if err != nil {
		return nil, diskErr(f.name, err)
	}
	h.base, h.disk = fi.Size(), fi
	if trunc {
		h.low = 0
	}
	if trunc || created {
		return h, nil
	}
	if fi.Size() > int64(h.max) {
		return nil, errs.E(errs.TooLarge, f.name+": over "+sizeText(h.max)+", too large to rewrite here")
	}
	b := make([]byte, fi.Size())
	n, err := fh.ReadAt(b, 0)
	if err != nil && n < len(b) {
		return nil, diskErr(f.name, err)
	}
	h.buf = b[:n]
	return h, nil
}

func (h *rewriteHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off >= int64(len(h.buf)) {
		return 0, nil
	}
	return copy(p, h.buf[off:]), nil
}

func (h *rewriteHandle) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := off + int64(len(p))
	if h.err != nil {
		return 0, h.err
	}
	if off < 0 || end > int64(h.max) {
		h.err = errs.E(errs.TooLarge, h.file.name+": over "+sizeText(h.max))
		return 0, h.err
	}
	next := h.buf
	if h.file.dir.pol.Validate != nil {
		next = append([]byte(nil), h.buf...) // an invalid write changes nothing
	}
	if end > int64(len(next)) {
		next = append(next, make([]byte, end-int64(len(next)))...)
	}
	copy(next[off:], p)
	if err := h.validate(next); err != nil && !errors.Is(err, ErrIncomplete) {
		h.dropUnlandedLocked()
		return 0, err
	}
	h.buf, h.dirty, h.low = next, true, min(h.low, off)
	return len(p), nil
}

func (h *rewriteHandle) validate(b []byte) error {
	if v := h.file.dir.pol.Validate; v != nil {
		return v(h.file.name, b)
	}
	return nil
}

// Truncate serves a wstat of length on the open file (ftruncate): it
// changes the copy, which the commit writes.
func (h *rewriteHandle) Truncate(size int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if size < 0 || size > int64(h.max) {
		h.err = errs.E(errs.TooLarge, h.file.name+": over "+sizeText(h.max))
		return h.err
	}
	if size > int64(len(h.buf)) {
		h.buf = append(h.buf, make([]byte, size-int64(len(h.buf)))...)
	}
	h.buf, h.dirty, h.low = h.buf[:size], true, min(h.low, size)
	return nil
}

// Sync commits the content if this open changed it since the last commit.
func (h *rewriteHandle) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.commitLocked()
}

func (h *rewriteHandle) commitLocked() error {
	if err := h.err; err != nil {
		h.err, h.dirty = nil, false
		h.reload()
		return errs.E(errs.KindOf(err), "not saved: "+err.Error())
	}
	if !h.dirty {
		return nil
	}
	if err := h.validate(h.buf); err != nil {
		h.dirty = false // said once; the next write tries again
		h.dropUnlandedLocked()
		if errors.Is(err, ErrIncomplete) {
			return errs.E(errs.Invalid, h.file.name+": unfinished content, not saved")
		}
		return err
	}
	var err error
	if h.appended() {
		err = h.appendInPlace()
	} else {
		err = h.replace(h.buf)
	}
	if err != nil {
		return err
	}
	h.dirty, h.landed, h.low, h.base = false, true, math.MaxInt64, int64(len(h.buf))
	if fi, err := h.file.dir.root.Stat(h.file.rel); err == nil {
		h.disk = fi
	}
	h.file.dir.pol.changed()
	return nil
}

// appended reports whether the change since the last commit only adds to
// the end of the file, which is still the one, of the length, it was.
// Validated documents are always replaced whole.
func (h *rewriteHandle) appended() bool {
	if h.file.dir.pol.Validate != nil || h.disk == nil || h.low < h.base || int64(len(h.buf)) <= h.base {
		return false
	}
	fi, err := h.file.dir.root.Stat(h.file.rel)
	return err == nil && os.SameFile(fi, h.disk) && fi.Size() == h.base
}

func (h *rewriteHandle) appendInPlace() error {
	f, err := h.file.dir.root.OpenFile(h.file.rel, os.O_WRONLY, 0)
	if err != nil {
		return diskErr(h.file.name, err)
	}
	_, err = f.WriteAt(h.buf[h.base:], h.base)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return diskErr(h.file.name, err)
	}
	return nil
}

// reload takes the content on disk again, after changes were voided.
func (h *rewriteHandle) reload() {
	h.buf, h.low = nil, math.MaxInt64
	f, err := h.file.dir.root.Open(h.file.rel)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() <= int64(h.max) {
		b := make([]byte, fi.Size())
		n, _ := f.ReadAt(b, 0)
		h.buf, h.base, h.disk = b[:n], int64(n), fi
	}
}

// Close commits, and removes a file this open created if nothing valid
// ever landed in it.
func (h *rewriteHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	err := h.commitLocked()
	if h.file.dir.pol.Validate != nil {
		h.dropUnlandedLocked()
	}
	return err
}

// dropUnlandedLocked removes the file this open created while nothing
// valid has landed in it: `echo garbage > a/new.json` and an unfinished
// document leave nothing behind, at the write or the commit that fails,
// not when the clunk comes (which the bridge does not wait for: a name
// still there meanwhile would be cached by the kernel, and the next
// writer's open would find it gone).
func (h *rewriteHandle) dropUnlandedLocked() {
	if h.created && !h.landed && !h.removed {
		h.file.dir.root.Remove(h.file.rel)
		h.file.dir.syncDir()
		h.removed = true
	}
}

var tmpSeq struct {
	sync.Mutex
	n int
}

// replace replaces the file with data: temp file, fsync, rename, fsync
// of the directory. The file keeps its mode and its qid.
func (h *rewriteHandle) replace(data []byte) error {
	d := h.file.parent()
	tmpSeq.Lock()
	tmpSeq.n++
	tmp := d.child(".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(tmpSeq.n))
	tmpSeq.Unlock()
	perm := os.FileMode(0644)
	if h.file.dir.pol.Exec {
		perm = 0755
	}
	fi, err := d.root.Stat(h.file.rel)
	switch {
	case err == nil:
		perm = fi.Mode().Perm()
	case !h.removed && !errs.Is(err, errs.NotExist): // else it is made again
		return diskErr(h.file.name, err)
	default:
		fi = nil
	}
	if err := writeSync(d.root, tmp, data, perm); err != nil {
		d.root.Remove(tmp)
		return diskErr(h.file.name, err)
	}
	if fi != nil {
		h.file.dir.fs.Qids.pathOf(fi) // known before the rename, to be kept
	}
	if err := d.root.Rename(tmp, h.file.rel); err != nil {
		d.root.Remove(tmp)
		return diskErr(h.file.name, err)
	}
	if nfi, err := d.root.Stat(h.file.rel); err == nil && fi != nil {
		h.file.dir.fs.Qids.rebind(fi, nfi) // the file keeps its identity
	}
	if err := d.syncDirErr(); err != nil {
		return diskErr(h.file.name, err)
	}
	return nil
}

func writeSync(root *os.Root, name string, data []byte, perm os.FileMode) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sizeText(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n>>10) + " KiB"
}
