package ns

import (
	"context"
	"log"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/batch"
	"ollie.dev/ollie/internal/errs"
)

// jobClone is an open of b/new or of a session's spawn file. A spec is
// normally one write, and its error comes back on that write. It may also
// arrive in several writes: a shell's printf per line, or a big prompt in
// pieces that each fill a whole 9P message. Those are kept until the spec
// has its --- line and a short write ends a line; else the read of the id,
// an fsync or the close makes the job.
type jobClone struct {
	make func(text string) (string, error)
	mu   sync.Mutex
	id   string
	wend int64  // offset just past the write that made the job
	buf  []byte // a spec arriving in several writes
	at   int64  // offset just past the last write
}

func (h *jobClone) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A spec that never completed is made now: the reader learns why it
	// fails rather than getting the template back.
	if err := h.makeLocked(); err != nil {
		return 0, err
	}
	return cloneRead(p, off, h.id, h.wend, "agent=\nmodel=\nbackend=\ncwd=\nparallel=1\n---\nPROMPT\n"), nil
}

func (h *jobClone) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.id != "" {
		return 0, errs.E(errs.Invalid, "this open already made job "+h.id+"; open new again for another")
	}
	// A spec may come in several writes (a shell's printf per line): it is
	// complete once it has its --- line and a write ends a line without
	// filling a whole 9P message.
	h.buf = append(h.buf, p...)
	h.at = off + int64(len(p))
	text := string(h.buf)
	complete := len(p) < fullChunk && strings.HasSuffix(text, "\n") &&
		(strings.Contains(text, "\n---\n") || strings.HasPrefix(text, "---\n"))
	if !complete && len(h.buf) < maxSpec {
		if err := h.checkHead(text); err != nil {
			h.buf = nil
			return 0, err
		}
		return len(p), nil
	}
	if err := h.makeLocked(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// makeLocked makes the job from the spec held so far, if there is one
// and no job was made yet.
func (h *jobClone) makeLocked() error {
	if h.id != "" || len(h.buf) == 0 {
		return nil
	}
	text := string(h.buf)
	h.buf = nil
	id, err := h.make(text)
	if err != nil {
		return err
	}
	h.id, h.wend = id, h.at
	return nil
}

// checkHead fails early on settings lines that are wrong already, so a
// garbled spec is reported on its write, not held back.
func (h *jobClone) checkHead(text string) error {
	if strings.Contains(text, "\n---\n") || strings.HasPrefix(text, "---\n") {
		return nil
	}
	done := text[:strings.LastIndex(text, "\n")+1]
	for _, line := range strings.Split(done, "\n") {
		if line == "---" {
			return nil
		}
		if _, err := parseKV(line, batch.SpecKeys); err != nil {
			return errs.E(errs.Invalid, "a job spec is key=value lines, a line ---, then the prompt: "+err.Error())
		}
	}
	return nil
}

// maxSpec bounds a job spec held back waiting for its end.
const maxSpec = 4 << 20

// Sync makes a held-back spec take effect, or fail, now (fsync).
func (h *jobClone) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.makeLocked()
}

// cloneRead serves a read of a clone file: the template of what to write
// until something was made, then its id. The id can be read at offset 0,
// as on Plan 9, or right after the write that made it (wend), where a
// shell that opened the file read-write (exec 3<>new) reads next.
func cloneRead(p []byte, off int64, id string, wend int64, template string) int {
	text := template
	if id != "" {
		text = id + "\n"
		if off >= wend {
			off -= wend
		}
	}
	if off >= int64(len(text)) {
		return 0
	}
	return copy(p, text[off:])
}

// Close starts a spec that never ended a line (printf without \n); its
// error can only go to the log.
func (h *jobClone) Close() error {
	if err := h.Sync(); err != nil {
		log.Printf("job spec at close: %v", err)
	}
	return nil
}
