package ns

import (
	"context"
	"io"
	"os"
	"sync"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
)

var (
	errWriteOnly = errs.E(errs.Permission, "file is write-only")
	errReadOnly  = errs.E(errs.Permission, "file is read-only")
)

// answerHandle serves a blocking file whose answer is computed by a read
// at offset 0 (which may block until ctx is done); reads further on serve
// the rest of that answer. Reading at 0 again asks again.
//
// Asks are serialized (ask may keep state, as popHandle's does), but by a
// token that a read waits for with its context, never by a lock held
// across ask: a second read at 0 waiting behind a blocked one is flushed
// at once.
type answerHandle struct {
	ask func(ctx context.Context) ([]byte, error)

	mu   sync.Mutex // guards turn and last; never held across ask
	turn chan struct{}
	last []byte
}

func (h *answerHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	b, err := h.ReadAnswer(ctx, len(p), off)
	return copy(p, b), err
}

// ReadAnswer is ReadAt returning the answer's bytes (tree.AnswerReader).
func (h *answerHandle) ReadAnswer(ctx context.Context, n int, off int64) ([]byte, error) {
	if off == 0 {
		turn := h.token()
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return nil, errs.E(errs.Interrupted)
		}
		b, err := h.ask(ctx)
		if err == nil {
			h.mu.Lock()
			h.last = b
			h.mu.Unlock()
		}
		<-turn
		if err != nil {
			return nil, err
		}
		return b[:min(n, len(b))], nil
	}
	h.mu.Lock()
	last := h.last
	h.mu.Unlock()
	if off >= int64(len(last)) {
		return nil, nil
	}
	last = last[off:]
	return last[:min(n, len(last))], nil
}

// token returns the channel whose one slot is the right to ask.
func (h *answerHandle) token() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.turn == nil {
		h.turn = make(chan struct{}, 1)
	}
	return h.turn
}

func (h *answerHandle) WriteAt(context.Context, []byte, int64) (int, error) { return 0, errReadOnly }
func (h *answerHandle) Close() error                                        { return nil }

// statewaitHandle: each read at offset 0 blocks until the state differs
// from the one last seen on this open (at first, the one at open).
func statewaitHandle(s *session.Session) tree.Handle {
	seen, _ := s.State()
	var mu sync.Mutex
	return &answerHandle{ask: func(ctx context.Context) ([]byte, error) {
		mu.Lock()
		from := seen
		mu.Unlock()
		st, err := s.WaitChange(from, ctx.Done())
		if err != nil {
			return nil, err
		}
		mu.Lock()
		seen = st
		mu.Unlock()
		return []byte(string(st) + "\n"), nil
	}}
}

// waitHandle blocks until the session is settled; it then says the state
// and, if the last turn failed, why.
func waitHandle(s *session.Session) tree.Handle {
	return &answerHandle{ask: func(ctx context.Context) ([]byte, error) {
		st, why, err := s.Wait(ctx.Done())
		if err != nil {
			return nil, err
		}
		if why != "" {
			return []byte(string(st) + ": " + why + "\n"), nil
		}
		return []byte(string(st) + "\n"), nil
	}}
}

// followHandle reads an append-only log and, at its end, blocks until it
// grows (events). The session's Changed channel signals growth.
type followHandle struct {
	s    *session.Session
	path string

	mu sync.Mutex
	f  *os.File
}

func (h *followHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	for {
		ch := h.s.Changed()
		n, err := h.readAt(p, off)
		if n > 0 {
			return n, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		if h.s.Removed() {
			return 0, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, errs.E(errs.Interrupted)
		}
	}
}

func (h *followHandle) readAt(p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		f, err := os.Open(h.path)
		if os.IsNotExist(err) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, err
		}
		h.f = f
	}
	return h.f.ReadAt(p, off)
}

func (h *followHandle) WriteAt(context.Context, []byte, int64) (int, error) { return 0, errReadOnly }

func (h *followHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f != nil {
		return h.f.Close()
	}
	return nil
}

// fileHandle serves a log on disk read-only (chat, context). A new
// session has no chat file yet: it is opened by the first read that finds
// it, so tail -f of a fresh session's chat sees what comes instead of an
// empty file forever.
type fileHandle struct {
	path string
	mu   sync.Mutex
	f    *os.File // nil until the file exists
}

func openFileHandle(path string) (tree.Handle, error) {
	h := &fileHandle{path: path}
	if _, err := h.file(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *fileHandle) file() (*os.File, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		f, err := os.Open(h.path)
		if os.IsNotExist(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		h.f = f
	}
	return h.f, nil
}

func (h *fileHandle) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	f, err := h.file()
	if f == nil {
		return 0, err
	}
	n, err := f.ReadAt(p, off)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func (h *fileHandle) WriteAt(context.Context, []byte, int64) (int, error) { return 0, errReadOnly }

func (h *fileHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f != nil {
		return h.f.Close()
	}
	return nil
}
