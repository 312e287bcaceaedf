package ninep

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"slices"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

var (
	errBadOffset   = errors.New("bad offset")
	errBadCount    = errors.New("bad count")
	errNotOpenRead = errors.New("not open for read")
)

// read serves Tread. The data goes straight into the reply: b grows to
// hold the whole Rread, and the handle reads into it.
func (c *conn) read(ctx context.Context, r *request, f *fid, b []byte) ([]byte, error) {
	c.srv.Stats.Ops[opRead].Add(1)
	f.mu.Lock()
	omode, h, isDir, dirOff := f.omode, f.h, f.qid.Type&plan9.QTDIR != 0, f.dirOff
	f.mu.Unlock()
	off := int64(r.offset)
	switch {
	case int32(r.count) < 0:
		return b, errBadCount
	case off < 0 || isDir && off != 0 && off != dirOff:
		return b, errBadOffset // directories are read in sequence
	case omode == -1 || omode&3 == plan9.OWRITE:
		return b, errNotOpenRead
	}
	count := int(r.count)
	if room := int(c.msize.Load()) - plan9.IOHDRSZ; count > room {
		count = max(room, 0)
	}
	if ar, ok := h.(tree.AnswerReader); ok {
		// The answer comes first, then the buffer for it: a read that
		// waits holds none.
		data, err := ar.ReadAnswer(ctx, count, off)
		if err == io.EOF {
			err = nil
		}
		c.srv.Stats.BytesRead.Add(uint64(len(data)))
		if err != nil && ctx.Err() != nil && !errs.Is(err, errs.Interrupted) {
			err = errs.E(errs.Interrupted)
		}
		if err != nil {
			return b, err
		}
		data = data[:min(len(data), count)]
		start := len(b)
		b = append(put32(putHdr(b, plan9.Rread, r.tag), uint32(len(data))), data...)
		return finish(b, start), nil
	}
	start := len(b)
	b = slices.Grow(b, rreadHdr+count)
	b = put32(putHdr(b, plan9.Rread, r.tag), 0)
	data := b[len(b) : len(b)+count]
	var n int
	var err error
	if h == nil {
		n, err = f.readDir(data, off)
	} else {
		n, err = h.ReadAt(ctx, data, off)
		if err == io.EOF {
			err = nil // the end of a file is an empty read in 9P, not an error
		}
		c.srv.Stats.BytesRead.Add(uint64(n))
		if err != nil && ctx.Err() != nil && !errs.Is(err, errs.Interrupted) {
			err = errs.E(errs.Interrupted)
		}
	}
	if err != nil {
		return b[:start], err
	}
	b = b[:len(b)+n]
	binary.LittleEndian.PutUint32(b[start+hdrSize:], uint32(n))
	return finish(b, start), nil
}

// readDir reads the directory snapshot: whole entries, as many as fit. A
// read at offset 0 starts over; any other continues where the last ended.
func (f *fid) readDir(data []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	if off > 0 {
		i = f.dirIdx
	}
	n := 0
	for ; i < len(f.dir); i++ {
		st, err := f.dir[i].Bytes()
		if err != nil {
			if n == 0 {
				return 0, err
			}
			break
		}
		if len(st) > len(data)-n {
			break
		}
		n += copy(data[n:], st)
	}
	f.dirIdx, f.dirOff = i, off+int64(n)
	return n, nil
}

func (c *conn) write(ctx context.Context, r *request, f *fid, b []byte) ([]byte, error) {
	c.srv.Stats.Ops[opWrite].Add(1)
	f.mu.Lock()
	omode, h := f.omode, f.h
	f.mu.Unlock()
	switch {
	case int64(r.offset) < 0:
		return b, errBadOffset
	case omode == -1 || omode&3 != plan9.OWRITE && omode&3 != plan9.ORDWR:
		return b, errNotOpenWrite
	case h == nil:
		return b, errs.E(errs.IsDir)
	}
	n, err := h.WriteAt(ctx, r.data, int64(r.offset))
	c.srv.Stats.BytesWritten.Add(uint64(n))
	if err != nil {
		return b, err
	}
	start := len(b)
	return finish(put32(putHdr(b, plan9.Rwrite, r.tag), uint32(n)), start), nil
}

func (c *conn) stat(r *request, f *fid, b []byte) ([]byte, error) {
	c.srv.Stats.Ops[opStat].Add(1)
	f.mu.Lock()
	n, root := f.path[len(f.path)-1], len(f.path) == 1
	f.mu.Unlock()
	st, err := n.Stat()
	if err != nil {
		return b, err
	}
	if root {
		st.Name = "/"
	}
	sb, err := st.Bytes()
	if err != nil {
		return b, err
	}
	start := len(b)
	b = append(put16(putHdr(b, plan9.Rstat, r.tag), uint16(len(sb))), sb...)
	return finish(b, start), nil
}

func (c *conn) remove(ctx context.Context, f *fid) error {
	c.srv.Stats.Ops[opRemove].Add(1)
	f.mu.Lock()
	path := f.path
	n, root := path[len(path)-1], len(path) == 1
	f.mu.Unlock()
	if root {
		return errs.E(errs.Permission, "cannot remove the root")
	}
	if err := c.guard(f, path, tree.OpRemove); err != nil {
		return err
	}
	rm, ok := n.(tree.Remover)
	if !ok {
		return errs.E(errs.Permission, "cannot remove this file")
	}
	f.mu.Lock()
	h := f.h
	f.h, f.rclose = nil, false
	f.mu.Unlock()
	if h != nil {
		h.Close()
	}
	return rm.Remove(ctx)
}
