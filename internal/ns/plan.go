package ns

import (
	"context"
	"sync"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
)

// planHandle is an open of plan, a file rewritten whole: the open starts
// from the current plan (or from nothing with O_TRUNC, without touching
// the plan on disk), writes and truncates edit that copy, and the commit
// (close, fsync) replaces the plan atomically and durably. A kill -9
// before the commit leaves the old plan; a write past the limit fails
// rather than being cut (NAMESPACE rules 1 and 4).
type planHandle struct {
	s *session.Session

	mu    sync.Mutex // reads run while writes of the same fid do
	buf   []byte
	dirty bool  // changed since the open or the last commit
	err   error // a write failed: the changes since the last commit are void
}

const maxPlan = 256 << 10

func openPlan(s *session.Session, mode uint8) (*planHandle, error) {
	h := &planHandle{s: s}
	if mode&plan9.OTRUNC == 0 {
		h.buf = s.Plan()
	} else {
		h.dirty = true // `: > plan` empties it, at the close
	}
	return h, nil
}

func (h *planHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off >= int64(len(h.buf)) {
		return 0, nil
	}
	return copy(p, h.buf[off:]), nil
}

func (h *planHandle) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := off + int64(len(p))
	if h.err != nil {
		return 0, h.err
	}
	if off < 0 || end > maxPlan {
		// The pieces of this write(2) taken before must not land either.
		h.err = errs.E(errs.TooLarge, "plan over "+sizeText(maxPlan))
		return 0, h.err
	}
	if end > int64(len(h.buf)) {
		h.buf = append(h.buf, make([]byte, end-int64(len(h.buf)))...)
	}
	copy(h.buf[off:], p)
	h.dirty = true
	return len(p), nil
}

func (h *planHandle) Truncate(size int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if size < 0 || size > maxPlan {
		h.err = errs.E(errs.TooLarge, "plan over "+sizeText(maxPlan))
		return h.err
	}
	if size > int64(len(h.buf)) {
		h.buf = append(h.buf, make([]byte, size-int64(len(h.buf)))...)
	}
	h.buf = h.buf[:size]
	h.dirty = true
	return nil
}

// Sync commits the plan if this open changed it.
func (h *planHandle) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.err; err != nil {
		h.err, h.dirty, h.buf = nil, false, h.s.Plan()
		return errs.E(errs.KindOf(err), "plan not changed: "+err.Error())
	}
	if !h.dirty {
		return nil
	}
	if err := h.s.SetPlan(h.buf); err != nil {
		return err
	}
	h.dirty = false
	return nil
}

func (h *planHandle) Close() error { return h.Sync() }

// statPlan reports the plan's true length (NAMESPACE rule 9: `[ -s plan ]`
// works) and a version that changes with each commit, which replaces the
// file: a new inode, a new mtime.
func statPlan(s *session.Session, st *plan9.Dir) { statDisk(s.PlanPath(), st) }
