package execute

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
)

// memMax is how much of a stage's output is kept in memory before it
// spills into a file in the session's tmp directory.
const memMax = 4 << 20

var errTooLarge = errors.New("output too large")

// errTmpFull is a spool that found no room in the session's tmp: its
// quota (sandbox.tmp_quota_mb) or the disk is full.
var errTmpFull = errors.New("no space left in the session's tmp (sandbox.tmp_quota_mb)")

// spoolError names a full tmp as such; other errors stay as they are.
func spoolError(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return errTmpFull
	}
	return err
}

// A spool holds one stage's stdout, in memory or, past memMax, in an
// unlinked file in the session's tmp directory: stages may pass each
// other gigabytes without the daemon holding them. Writes are
// sequential; reads start after the writes are done.
type spool struct {
	dir   string
	limit int64 // writes past this fail with errTooLarge
	mem   bytes.Buffer
	f     *os.File
	n     int64
}

func newSpool(dir string, limit int64) *spool { return &spool{dir: dir, limit: limit} }

func (s *spool) Write(p []byte) (int, error) {
	if s.n+int64(len(p)) > s.limit {
		return 0, errTooLarge
	}
	if s.f == nil && s.mem.Len()+len(p) > memMax {
		f, err := os.CreateTemp(s.dir, ".ollie-spool-*")
		if err != nil {
			return 0, spoolError(err)
		}
		os.Remove(f.Name()) // unlinked: nothing to clean up, nothing for stages to see
		if _, err := f.Write(s.mem.Bytes()); err != nil {
			f.Close()
			return 0, spoolError(err)
		}
		s.f = f
		s.mem = bytes.Buffer{}
	}
	var n int
	var err error
	if s.f != nil {
		n, err = s.f.Write(p)
	} else {
		n, err = s.mem.Write(p)
	}
	s.n += int64(n)
	if err != nil {
		err = spoolError(err)
	}
	return n, err
}

// Len is the number of bytes written.
func (s *spool) Len() int64 { return s.n }

// Reader returns a reader of the whole content; several may be open at
// once, as the branches of a parallel stage read the same input.
func (s *spool) Reader() io.Reader {
	if s == nil {
		return nil
	}
	if s.f != nil {
		return io.NewSectionReader(s.f, 0, s.n)
	}
	return bytes.NewReader(s.mem.Bytes())
}

// Bytes returns up to max bytes from offset off.
func (s *spool) Bytes(off, max int64) []byte {
	if off >= s.n {
		return nil
	}
	if max > s.n-off {
		max = s.n - off
	}
	if s.f == nil {
		return s.mem.Bytes()[off : off+max]
	}
	b := make([]byte, max)
	n, _ := s.f.ReadAt(b, off)
	return b[:n]
}

// Close releases the file, if any.
func (s *spool) Close() {
	if s != nil && s.f != nil {
		s.f.Close()
	}
}

// headTail keeps the first and last max bytes written to it: enough of a
// stage's stderr to explain a failure, whatever its size.
type headTail struct {
	max  int
	head []byte
	tail []byte
	n    int64
}

func (h *headTail) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	q := p
	if room := h.max - len(h.head); room > 0 {
		k := min(room, len(q))
		h.head = append(h.head, q[:k]...)
		q = q[k:]
	}
	if len(q) > 0 {
		h.tail = append(h.tail, q...)
		if len(h.tail) > h.max {
			h.tail = append(h.tail[:0], h.tail[len(h.tail)-h.max:]...)
		}
	}
	return len(p), nil
}

// String is the kept text, with a mark where bytes were dropped.
func (h *headTail) String() string {
	dropped := h.n - int64(len(h.head)+len(h.tail))
	if dropped <= 0 {
		return string(h.head) + string(h.tail)
	}
	return cutMark(string(trimEnd(h.head)), string(trimStart(h.tail)), dropped, "")
}
