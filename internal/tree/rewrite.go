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

// Rewrite is an open of a file rewritten whole: it holds a copy of the
// content, which writes and truncates edit and which the commit (Sync,
// Close: over 9P a null wstat and the clunk, over FUSE the close(2) of
// each descriptor) hands to the file's Save whole. Nothing reaches the
// file before the commit, so an open with O_TRUNC, a kill -9 before the
// commit or a failed write leaves the content as it was; a write past the
// limit fails rather than being cut, and voids the changes since the last
// commit, even the pieces of that write(2) taken before (NAMESPACE rules
// 1 and 4).
//
// With a Check, each write is checked against the content it would
// produce: a write that makes the content wrong fails and changes
// nothing; content that is only unfinished (ErrIncomplete) waits for the
// next write, and fails the commit if it is still unfinished then.
//
// A Rewrite is the handle of the rewritten files of a disk directory
// (DiskPolicy.Atomic: a/ sk/ t/ m/) and of files other packages keep
// (a session's plan). Its methods are safe for concurrent use: the reads
// of a fid run while its writes do.
type Rewrite struct {
	name string
	max  int
	ops  RewriteOps

	mu    sync.Mutex
	buf   []byte
	dirty bool  // changed since the open or the last commit
	low   int64 // the lowest offset changed since (math.MaxInt64 if none)
	err   error // a write failed for its size: the changes since the last commit are void
}

// RewriteOps are what a Rewrite does with the file it edits. They run
// with the Rewrite's lock held, one at a time.
type RewriteOps struct {
	// Save stores b as the whole content; low is the lowest offset
	// changed since the last save. After an error the changes stay, for
	// the next commit.
	Save func(b []byte, low int64) error
	// Reload returns the content as stored, when the changes of an open
	// were voided.
	Reload func() []byte
	// Check, if set, validates content (see Rewrite).
	Check func(b []byte) error
	// Invalid, if set, is told when a write or a commit finds the content
	// invalid; Closed, if set, runs at Close after the commit.
	Invalid, Closed func()
}

// NewRewrite returns an open of the file name (named so in errors)
// holding content, of at most max bytes. changed says the open already
// differs from the file (an O_TRUNC of a non-empty one), so that a commit
// with no write saves it.
func NewRewrite(name string, max int, content []byte, changed bool, ops RewriteOps) *Rewrite {
	r := &Rewrite{name: name, max: max, ops: ops, buf: content, dirty: changed, low: math.MaxInt64}
	if changed {
		r.low = 0
	}
	return r
}

func (r *Rewrite) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if off >= int64(len(r.buf)) {
		return 0, nil
	}
	return copy(p, r.buf[off:]), nil
}

func (r *Rewrite) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := off + int64(len(p))
	if r.err != nil {
		return 0, r.err
	}
	if off < 0 || end > int64(r.max) {
		r.err = r.tooLarge()
		return 0, r.err
	}
	next := r.buf
	if r.ops.Check != nil {
		next = append([]byte(nil), r.buf...) // an invalid write changes nothing
	}
	if end > int64(len(next)) {
		next = append(next, make([]byte, end-int64(len(next)))...)
	}
	copy(next[off:], p)
	if err := r.check(next); err != nil && !errors.Is(err, ErrIncomplete) {
		r.invalid()
		return 0, err
	}
	r.buf, r.dirty, r.low = next, true, min(r.low, off)
	return len(p), nil
}

func (r *Rewrite) tooLarge() error { return errs.E(errs.TooLarge, r.name+": over "+sizeText(r.max)) }

func (r *Rewrite) check(b []byte) error {
	if r.ops.Check != nil {
		return r.ops.Check(b)
	}
	return nil
}

func (r *Rewrite) invalid() {
	if r.ops.Invalid != nil {
		r.ops.Invalid()
	}
}

// Truncate serves a wstat of length on the open file (ftruncate): it
// changes the copy, which the commit saves.
func (r *Rewrite) Truncate(size int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if size < 0 || size > int64(r.max) {
		r.err = r.tooLarge()
		return r.err
	}
	if size > int64(len(r.buf)) {
		r.buf = append(r.buf, make([]byte, size-int64(len(r.buf)))...)
	}
	r.buf, r.dirty, r.low = r.buf[:size], true, min(r.low, size)
	return nil
}

// Sync commits the content if this open changed it since the last commit.
func (r *Rewrite) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commitLocked()
}

func (r *Rewrite) commitLocked() error {
	if err := r.err; err != nil {
		r.err, r.dirty, r.low = nil, false, math.MaxInt64
		r.buf = nil
		if r.ops.Reload != nil {
			r.buf = r.ops.Reload()
		}
		return errs.E(errs.KindOf(err), "not saved: "+err.Error())
	}
	if !r.dirty {
		return nil
	}
	if err := r.check(r.buf); err != nil {
		r.dirty = false // said once; the next write tries again
		r.invalid()
		if errors.Is(err, ErrIncomplete) {
			return errs.E(errs.Invalid, r.name+": unfinished content, not saved")
		}
		return err
	}
	if err := r.ops.Save(r.buf, r.low); err != nil {
		return err
	}
	r.dirty, r.low = false, math.MaxInt64
	return nil
}

// Close commits; then Closed runs.
func (r *Rewrite) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.commitLocked()
	if r.ops.Closed != nil {
		r.ops.Closed()
	}
	return err
}

// rewriteHandle is a Rewrite of a file of a disk directory whose files are
// rewritten whole (DiskPolicy.Atomic: a/ sk/ t/ m/). The commit replaces
// the file atomically: temp file, fsync, rename, fsync of the directory.
//
// A commit that only added to the end of the file as it is on disk
// (`echo x >> m/log`) appends in place instead, and fsyncs: the old
// content is never at risk, and `tail -f`, which follows the descriptor,
// sees the new lines (after a rename it would follow a removed file).
//
// Its fields are guarded by the Rewrite's lock: only its ops touch them.
type rewriteHandle struct {
	*Rewrite
	file    *DiskFile
	created bool // made by this open: removed again if nothing valid lands
	removed bool // created, then removed by an invalid write
	landed  bool // some content was committed
	// base is the length of the file on disk as of the open or the last
	// commit, and disk its identity then (nil if the open made it).
	base int64
	disk os.FileInfo
}

// Bounds on the content an open holds: validated documents (agents,
// skills) and everything else (tools, notes).
const (
	maxValidated = 1 << 20
	maxRewritten = 16 << 20
)

func (f *DiskFile) rewriter(fh *os.File, trunc, created bool) (Handle, error) {
	defer fh.Close()
	h := &rewriteHandle{file: f, created: created}
	max := maxRewritten
	ops := RewriteOps{Save: h.save, Reload: h.reload}
	if v := f.dir.pol.Validate; v != nil {
		max = maxValidated
		ops.Check = func(b []byte) error { return v(f.name, b) }
		ops.Invalid, ops.Closed = h.dropUnlanded, h.dropUnlanded
	}
	fi, err := fh.Stat()
	if err != nil {
		return nil, diskErr(f.name, err)
	}
	h.base, h.disk = fi.Size(), fi
	var content []byte
	if !trunc && !created {
		if fi.Size() > int64(max) {
			return nil, errs.E(errs.TooLarge, f.name+": over "+sizeText(max)+", too large to rewrite here")
		}
		b := make([]byte, fi.Size())
		n, err := fh.ReadAt(b, 0)
		if err != nil && n < len(b) {
			return nil, diskErr(f.name, err)
		}
		content = b[:n]
	}
	h.Rewrite = NewRewrite(f.name, max, content, trunc && !created, ops)
	if trunc && created {
		h.Rewrite.low = 0
	}
	return h, nil
}

// save writes the content: appended in place, or replaced whole.
func (h *rewriteHandle) save(b []byte, low int64) error {
	var err error
	if h.appended(b, low) {
		err = h.appendInPlace(b)
	} else {
		err = h.replace(b)
	}
	if err != nil {
		return err
	}
	h.landed, h.base = true, int64(len(b))
	if fi, err := h.file.dir.root.Stat(h.file.rel); err == nil {
		h.disk = fi
	}
	h.file.dir.pol.changed()
	return nil
}

// appended reports whether the change since the last commit only adds to
// the end of the file, which is still the one, of the length, it was.
// Validated documents are always replaced whole.
func (h *rewriteHandle) appended(b []byte, low int64) bool {
	if h.file.dir.pol.Validate != nil || h.disk == nil || low < h.base || int64(len(b)) <= h.base {
		return false
	}
	fi, err := h.file.dir.root.Stat(h.file.rel)
	return err == nil && os.SameFile(fi, h.disk) && fi.Size() == h.base
}

func (h *rewriteHandle) appendInPlace(b []byte) error {
	f, err := h.file.dir.root.OpenFile(h.file.rel, os.O_WRONLY, 0)
	if err != nil {
		return diskErr(h.file.name, err)
	}
	_, err = f.WriteAt(b[h.base:], h.base)
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
func (h *rewriteHandle) reload() []byte {
	f, err := h.file.dir.root.Open(h.file.rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > int64(h.max) {
		return nil
	}
	b := make([]byte, fi.Size())
	n, _ := f.ReadAt(b, 0)
	h.base, h.disk = int64(n), fi
	return b[:n]
}

// dropUnlanded removes the file this open created while nothing
// valid has landed in it: `echo garbage > a/new.json` and an unfinished
// document leave nothing behind, at the write or the commit that fails,
// not when the clunk comes (which the bridge does not wait for: a name
// still there meanwhile would be cached by the kernel, and the next
// writer's open would find it gone).
func (h *rewriteHandle) dropUnlanded() {
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
