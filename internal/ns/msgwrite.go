package ns

import (
	"context"
	"log"
	"sync"
)

// fullChunk is the size of a write that fills a whole 9P message: a
// client splitting a long text sends such pieces before the last one.
const fullChunk = 64 * 1024

// msgHandle turns writes into whole messages (prompts, queued prompts).
// A write normally is one message. A long message arrives as several
// writes at consecutive offsets; it is complete when a write ends with a
// newline and does not fill a whole 9P message, or at fsync, or at close.
// The message is submitted, and its error returned, on the write that
// completes it.
type msgHandle struct {
	submit func(string) error

	mu  sync.Mutex
	buf []byte
	at  int64 // offset just past buf in the client's file
}

func (h *msgHandle) ReadAt(context.Context, []byte, int64) (int, error) { return 0, errWriteOnly }

func (h *msgHandle) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) > 0 && off != h.at {
		// Not a continuation: the pending text was a message of its own.
		if err := h.flushLocked(); err != nil {
			return 0, err
		}
	}
	h.buf = append(h.buf, p...)
	h.at = off + int64(len(p))
	if len(p) > 0 && p[len(p)-1] == '\n' && len(p) < fullChunk {
		if err := h.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (h *msgHandle) flushLocked() error {
	msg := string(h.buf)
	h.buf = nil
	return h.submit(msg)
}

// Sync submits pending text (a null wstat: fsync).
func (h *msgHandle) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buf) == 0 {
		return nil
	}
	return h.flushLocked()
}

func (h *msgHandle) Close() error {
	if err := h.Sync(); err != nil {
		log.Printf("message submitted at close failed: %v", err)
	}
	return nil
}
