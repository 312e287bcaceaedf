package tree

import (
	"context"
	"errors"
	"log"
	"os"
	"strconv"
	"sync"

	"ollie.dev/ollie/internal/errs"
)

// validHandle is an open file of a validated directory (a/). The content
// is kept whole in buf; each write is validated against the content it
// would produce and, when valid, replaces the file atomically before the
// write returns. An invalid write fails and leaves buf and the disk as
// they were.
type validHandle struct {
	file    *DiskFile
	mu      sync.Mutex
	f       *os.File
	buf     []byte
	created bool // made by this open: removed again if nothing valid lands
	removed bool // created, then removed by an invalid write
	landed  bool // some content was committed
	pending bool // buf holds an unfinished document not yet on disk
}

func (h *validHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off >= int64(len(h.buf)) {
		return 0, nil
	}
	return copy(p, h.buf[off:]), nil
}

const maxValidated = 1 << 20

func (h *validHandle) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := off + int64(len(p))
	if end > maxValidated {
		return 0, errs.E(errs.TooLarge, h.file.name+": over 1 MiB")
	}
	next := make([]byte, max(int64(len(h.buf)), end))
	copy(next, h.buf)
	copy(next[off:], p)
	err := h.file.dir.pol.Validate(h.file.name, next)
	switch {
	case err == nil:
		if err := h.commit(next); err != nil {
			return 0, err
		}
		h.pending = false
	case errors.Is(err, ErrIncomplete):
		h.pending = true
	default:
		if h.created && !h.landed && !h.removed {
			// `echo garbage > a/new.json` leaves nothing behind, at
			// once: the clunk that would remove the file comes later,
			// after the shell has moved on.
			h.file.dir.root.Remove(h.file.rel)
			h.file.dir.syncDir()
			h.removed = true
		}
		return 0, err
	}
	h.buf = next
	return len(p), nil
}

// Truncate serves a wstat of length on the open file: the content is
// replaced by the next complete write.
func (h *validHandle) Truncate(size int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if size > int64(len(h.buf)) {
		return errs.E(errs.Invalid, "cannot extend "+h.file.name)
	}
	h.buf = h.buf[:size]
	h.pending = size > 0
	return nil
}

var tmpSeq struct {
	sync.Mutex
	n int
}

// commit replaces the file with data: temp file, fsync, rename, fsync dir.
func (h *validHandle) commit(data []byte) error {
	d := h.file.parent()
	tmpSeq.Lock()
	tmpSeq.n++
	tmp := d.child(".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(tmpSeq.n))
	tmpSeq.Unlock()
	perm := os.FileMode(0644)
	fi, err := d.root.Stat(h.file.rel)
	switch {
	case err == nil:
		perm = fi.Mode().Perm()
	case !h.removed: // else an invalid write removed the file it created
		return diskErr(h.file.name, err)
	}
	if err := writeSync(d.root, tmp, data, perm); err != nil {
		d.root.Remove(tmp)
		return diskErr(h.file.name, err)
	}
	var oldPath uint64
	if fi != nil {
		oldPath = h.file.dir.fs.Qids.pathOf(fi)
	}
	if err := d.root.Rename(tmp, h.file.rel); err != nil {
		d.root.Remove(tmp)
		return diskErr(h.file.name, err)
	}
	if nfi, err := d.root.Stat(h.file.rel); err == nil {
		h.file.dir.fs.Qids.rebind(oldPath, nfi) // the file keeps its identity
	}
	d.syncDir()
	h.landed = true
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

// Sync reports content that was written but is not on disk because it
// never became a complete, valid document.
func (h *validHandle) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending {
		return errs.E(errs.Invalid, h.file.name+": unfinished content is not saved")
	}
	return nil
}

func (h *validHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending {
		log.Printf("%s: unfinished content discarded at close", h.file.rel)
	}
	if h.created && !h.landed && !h.removed {
		h.file.dir.root.Remove(h.file.rel)
	}
	return h.f.Close()
}
