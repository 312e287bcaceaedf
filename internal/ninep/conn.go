package ninep

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/tree"
)

// conn is one 9P conversation.
//
// Its reader (serve) owns the fid table, the request it decodes into and
// obuf, and serves every request that cannot block itself: its reply goes
// to obuf, which is written when no further request is waiting in the
// input, so a burst of pipelined requests costs one write. A request that
// may block becomes a pending one and runs in a goroutine holding a
// reference to its fid; it writes its reply itself.
//
// Lock order: wmu, then mu.
type conn struct {
	srv   *Server
	in    *bufio.Reader
	out   io.Writer
	msize atomic.Uint32 // negotiated by Tversion; read by pending requests
	token *Token        // the token Tauth must present; nil: no authentication (auth.go)

	fids map[uint32]*fid
	who  *tree.Principal // the peer; nil for the daemon's user (guard.go)
	req  request
	obuf []byte

	// wmu guards the queue of replies to write. Replies are queued whole
	// and in order; whoever queues when no one is writing writes the
	// queue, with what others add meanwhile, until it is empty: one
	// write for the replies of many requests finishing at once, and no
	// request waits on the socket while holding the lock. A pending
	// request removes its tag and queues its reply under wmu, so a Tflush
	// that finds the tag gone queues its Rflush only after that reply.
	wmu     sync.Mutex
	drained sync.Cond // on wmu: the queue fell below maxQueued, or dead
	outq    []byte    // replies queued, not yet written
	spare   []byte    // the last batch written, for reuse
	writing bool      // someone is writing the queue
	dead    bool      // out failed, or the conversation is over

	mu sync.Mutex
	// pending are the requests running in goroutines, and the Tflushes
	// waiting for them, by tag.
	pending map[uint16]*pending
	// running counts the requests in goroutines, and pendingBytes their
	// buffers: at most MaxPending and MaxPendingBytes but for clunks and
	// removes (limits.go).
	running, pendingBytes int
}

var errTooLong = errors.New("message longer than msize")
var errTooShort = errors.New("message shorter than its header")

func (c *conn) serve() {
	for {
		if !c.waiting() || len(c.obuf) >= inSize {
			c.flushOut()
		}
		msg, big, err := c.next()
		if err != nil {
			if err == errTooLong || err == errTooShort {
				c.srv.logf("9p: %v: closing the connection", err) // the client broke the protocol
			}
			break
		}
		c.trace("<-", msg)
		kept := false
		if err := parse(msg, &c.req); err != nil {
			c.obuf = rerror(c.obuf, c.req.tag, c.srv.ename(err), c.msize.Load())
		} else {
			kept = c.dispatch(&c.req, big)
		}
		switch {
		case big == nil:
			c.in.Discard(len(msg))
		case !kept:
			putBuf(big)
		}
	}
	c.flushOut()
	c.hangup()
}

// waiting reports whether a whole request is in the input buffer, so that
// reading it will not block.
func (c *conn) waiting() bool {
	n := c.in.Buffered()
	if n < 4 {
		return false
	}
	hdr, _ := c.in.Peek(4)
	return int(binary.LittleEndian.Uint32(hdr)) <= n
}

// next returns the next message. One that fits the input buffer is left
// there (the caller discards it once served); a longer one is read into
// big, a pooled buffer.
func (c *conn) next() (msg []byte, big *[]byte, err error) {
	hdr, err := c.in.Peek(4)
	if err != nil {
		if len(hdr) > 0 && err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	n := binary.LittleEndian.Uint32(hdr)
	switch {
	case n < hdrSize:
		return nil, nil, errTooShort
	case n > c.msize.Load():
		return nil, nil, errTooLong
	case int(n) <= c.in.Size():
		msg, err = c.in.Peek(int(n))
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return msg, nil, err
	}
	big = getBuf(0)
	msg, err = readGrowing(c.in, (*big)[:0], int(n))
	*big = msg[:0]
	if err != nil {
		putBuf(big)
		return nil, nil, err
	}
	return msg, big, nil
}

// readGrowing reads n bytes into b, growing it at most to twice what has
// arrived: a size field promising msize and then nothing costs inSize,
// not msize. A pooled buffer big enough already is not grown at all.
func readGrowing(r io.Reader, b []byte, n int) ([]byte, error) {
	for len(b) < n {
		k := min(n-len(b), max(len(b), inSize))
		if cap(b) < len(b)+k {
			b = append(make([]byte, 0, len(b)+k), b...) // exactly: append would round up
		}
		got, err := io.ReadFull(r, b[len(b):len(b)+k])
		b = b[:len(b)+got]
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// flushOut writes the replies of the requests served inline.
func (c *conn) flushOut() {
	if len(c.obuf) == 0 {
		return
	}
	c.send(c.obuf)
	c.obuf = c.obuf[:0]
}

// maxQueued bounds the replies queued on a connection: past it, whoever
// has a reply to queue (the reader among them) waits for the queue to be
// written. A client that sends requests and never reads the replies
// fills its socket, then this queue, and then the reader stops reading
// its requests: what the connection holds stays bounded.
const maxQueued = 1 << 20

func (c *conn) send(b []byte) {
	c.wmu.Lock()
	c.roomLocked()
	c.queueLocked(b)
	c.wmu.Unlock()
}

// roomLocked waits until the queue has room for a reply (an empty queue
// always has), or the conversation is over.
func (c *conn) roomLocked() {
	for len(c.outq) >= maxQueued && !c.dead {
		c.drained.Wait()
	}
}

// queueLocked queues whole replies b (copied) and, if no one is writing,
// writes the queue until it is empty. Once a write has failed, the
// conversation is over and the rest are dropped.
func (c *conn) queueLocked(b []byte) {
	if c.dead || len(b) == 0 {
		return
	}
	c.outq = append(c.outq, b...)
	if c.writing {
		return
	}
	c.writing = true
	for len(c.outq) > 0 && !c.dead {
		q := c.outq
		c.outq, c.spare = c.spare[:0], nil
		c.wmu.Unlock()
		c.trace("->", q)
		_, err := c.out.Write(q)
		c.wmu.Lock()
		if err != nil {
			c.srv.logf("9p: write: %v", err)
			c.dead = true
		}
		if cap(q) <= 2*maxQueued {
			c.spare = q[:0]
		}
		c.drained.Broadcast()
	}
	if c.dead {
		c.outq = nil
	}
	c.writing = false
}

// hangup ends the conversation: running requests are cancelled and their
// replies dropped, and every fid is clunked once no request holds it.
func (c *conn) hangup() {
	c.wmu.Lock()
	c.dead = true
	c.drained.Broadcast()
	c.wmu.Unlock()
	c.mu.Lock()
	for _, p := range c.pending {
		if p.cancel != nil {
			p.cancel()
		}
	}
	c.mu.Unlock()
	for id, f := range c.fids {
		delete(c.fids, id)
		c.drop(f)
	}
}

// dispatch serves r inline, or starts it in a goroutine. big, if not nil,
// holds r's message, which r's data aliases; dispatch reports whether the
// request kept it.
func (c *conn) dispatch(r *request, big *[]byte) (kept bool) {
	if r.typ == plan9.Tflush {
		c.flush(r)
		return false
	}
	c.mu.Lock()
	_, dup := c.pending[r.tag]
	c.mu.Unlock()
	if dup {
		// The running request keeps the tag; this one is answered.
		c.obuf = rerror(c.obuf, r.tag, "duplicate tag", c.msize.Load())
		return false
	}
	var f *fid
	switch r.typ {
	case plan9.Tversion, plan9.Tauth, plan9.Tattach, plan9.Twalk:
		if err := c.fidLimit(r); err != nil {
			c.obuf = rerror(c.obuf, r.tag, err.Error(), c.msize.Load())
		} else {
			c.obuf = c.serveConn(r, c.obuf)
		}
		return false
	case plan9.Tclunk, plan9.Tremove:
		// The fid is gone for the requests that follow; the table's
		// reference passes to this one.
		if f = c.fids[r.fid]; f != nil {
			delete(c.fids, r.fid)
		}
	default:
		f = c.fids[r.fid]
	}
	if f == nil {
		c.obuf = rerror(c.obuf, r.tag, "unknown fid", c.msize.Load())
		return false
	}
	if c.prompt(r, f) {
		c.obuf = c.run(context.Background(), r, f, c.obuf)
		return false
	}
	cost, err := c.admit(r)
	if err != nil {
		c.obuf = rerror(c.obuf, r.tag, err.Error(), c.msize.Load())
		return false
	}
	if r.typ != plan9.Tclunk && r.typ != plan9.Tremove {
		f.refs.Add(1)
	}
	c.start(r, f, big, cost)
	return big != nil
}

// trace prints the messages of b to the server's Trace, if it has one.
func (c *conn) trace(dir string, b []byte) {
	w := c.srv.Trace
	for w != nil && len(b) >= 4 {
		n := int(binary.LittleEndian.Uint32(b))
		if n < 4 || n > len(b) {
			return
		}
		f, err := plan9.UnmarshalFcall(b[:n])
		if err != nil {
			io.WriteString(w, dir+" "+err.Error()+"\n")
		} else {
			io.WriteString(w, dir+" "+f.String()+"\n")
		}
		b = b[n:]
	}
}
