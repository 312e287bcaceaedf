package ns

import (
	"bytes"
	"context"
	"sync"
	"unicode/utf8"

	"ollie.dev/ollie/internal/errs"
)

// A message file (prompt, fifo.in, s/new, b/new, spawn, cfg, env) takes
// one message per open: the bytes written between the open, or the last
// commit, and the commit, however the writer splits them (bash's printf
// writes a line at a time). NAMESPACE rule 1.
//
// The bytes are checked as they arrive, so that an error already visible
// (too large, not UTF-8, a line that is wrong) fails the write(2) that
// caused it. The message is committed at close (Tclunk; over FUSE, the
// FLUSH of close(2), which the bridge sends as a null wstat) or at fsync,
// and the commit's error is the answer to that request. Nothing is kept
// for later: after a commit the handle is empty again, and a commit with
// nothing written since the last one does nothing (a dup'd descriptor
// closed after another one).
//
// Offsets mean nothing in a message: the bytes are taken in the order
// they arrive, which is the order of the writes on the fid (a writer with
// O_APPEND writes every piece at the length of an empty file).
type msgSpec struct {
	what string // "prompt": errors are "prompt over 4 MiB"
	max  int    // bytes at most
	// lines, if set, checks the complete lines received so far (all of
	// them, each time a write ends one): an error fails the write.
	lines func(done string) error
}

type msgHandle struct {
	spec   *msgSpec
	commit func(msg string) error

	mu   sync.Mutex
	buf  []byte
	good int   // buf[:good] is whole, valid UTF-8
	err  error // a write failed: the message is void until the next commit
}

func newMsg(spec *msgSpec, commit func(string) error) *msgHandle {
	return &msgHandle{spec: spec, commit: commit}
}

func (h *msgHandle) ReadAt(context.Context, []byte, int64) (int, error) { return 0, errWriteOnly }

func (h *msgHandle) WriteAt(_ context.Context, p []byte, _ int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.addLocked(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// addLocked appends p to the message after checking what it can already.
// A failure voids the message: its later pieces fail too, and so does the
// commit, so that a writer that ignores a write error still learns at
// close that nothing was sent.
func (h *msgHandle) addLocked(p []byte) error {
	if h.err != nil {
		return h.err
	}
	if len(h.buf)+len(p) > h.spec.max {
		return h.void(errs.E(errs.TooLarge, h.spec.what+" over "+sizeText(h.spec.max)))
	}
	h.buf = append(h.buf, p...)
	n, ok := validPrefix(h.buf[h.good:])
	h.good += n
	if !ok {
		return h.void(errs.E(errs.Invalid, h.spec.what+" is not UTF-8 text"))
	}
	if h.spec.lines != nil && bytes.IndexByte(p, '\n') >= 0 {
		done := h.buf[:bytes.LastIndexByte(h.buf, '\n')+1]
		if err := h.spec.lines(string(done)); err != nil {
			return h.void(err)
		}
	}
	return nil
}

func (h *msgHandle) void(err error) error {
	h.err, h.buf, h.good = err, nil, 0
	return err
}

// takeLocked returns the message written since the last commit and
// empties the handle; ok is false if there is nothing to commit.
func (h *msgHandle) takeLocked() (msg string, ok bool, err error) {
	buf, good, werr := h.buf, h.good, h.err
	h.buf, h.good, h.err = nil, 0, nil
	switch {
	case werr != nil:
		return "", false, errs.E(errs.KindOf(werr), "nothing sent: "+werr.Error())
	case len(buf) == 0:
		return "", false, nil
	case good < len(buf):
		return "", false, errs.E(errs.Invalid, h.spec.what+" ends inside a UTF-8 character")
	}
	return string(buf), true, nil
}

// Sync commits the message (fsync; over FUSE also the close(2) of each
// descriptor, see fusebridge's Flush).
func (h *msgHandle) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg, ok, err := h.takeLocked()
	if !ok {
		return err
	}
	return h.commit(msg)
}

// Close commits what the last commit left (a 9P client's Tclunk).
func (h *msgHandle) Close() error { return h.Sync() }

// validPrefix returns how many bytes at the start of b are whole, valid
// UTF-8, and false if b has an invalid sequence (rather than one cut off
// at its end, which the next write may complete).
func validPrefix(b []byte) (int, bool) {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i, !utf8.FullRune(b[i:])
		}
		i += n
	}
	return i, true
}

func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return itoa(int64(n>>20)) + " MiB"
	}
	return itoa(int64(n>>10)) + " KiB"
}

// ctlHandle is an open of ctl, the exception to one message per open:
// each write(2) is one or more commands, a line each (the last line needs
// no newline), applied in order and answered on that write. The first
// that fails fails the write; those before it were applied.
type ctlHandle struct {
	run func(cmd string) error
}

func (h *ctlHandle) ReadAt(context.Context, []byte, int64) (int, error) { return 0, errWriteOnly }

func (h *ctlHandle) WriteAt(_ context.Context, p []byte, _ int64) (int, error) {
	if len(p) > maxCtl {
		return 0, errs.E(errs.TooLarge, "ctl write over "+sizeText(maxCtl))
	}
	if !utf8.Valid(p) {
		return 0, errs.E(errs.Invalid, "ctl: command is not UTF-8 text")
	}
	lines := bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n"))
	if len(lines) == 1 && len(bytes.TrimSpace(lines[0])) == 0 {
		return 0, errs.E(errs.Invalid, "empty control message")
	}
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := h.run(string(l)); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (h *ctlHandle) Close() error { return nil }

const maxCtl = 64 << 10

// promptMsg frames prompt and fifo.in; session.Submit checks the same
// bound, and that the prompt is not blank, at the commit.
var promptMsg = &msgSpec{what: "prompt", max: 4 << 20}
