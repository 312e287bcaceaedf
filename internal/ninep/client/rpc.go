package client

import (
	"context"
	"encoding/binary"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// callState is where a call is in its life. It is guarded by Conn.mu, and
// its transitions decide who may touch the reply fields: only whoever moves
// a call from stateWaiting to stateReplied (the reader, or fail) writes
// them, and then signals done exactly once.
type callState uint8

const (
	stateFree    callState = iota // tag available
	stateWaiting                  // a reply is due
	stateReplied                  // reply fields written (or being written); done will be signalled
	stateFlushed                  // Rflush came first: no reply will come; tag not yet released
)

// A call is one outstanding RPC. Calls live as long as the Conn, one per
// tag ever used, and are reused with their tag so that the hot path does
// not allocate.
type call struct {
	tag   uint16
	state callState // guarded by Conn.mu
	done  chan struct{}
	ttype uint8
	buf   []byte // the T-message being built and sent

	// The reply, written by the reader before it signals done.
	err     error  // connection failure
	rtype   uint8  // Rerror or ttype+1
	ename   string // Rerror
	qid     plan9.Qid
	iounit  uint32
	count   uint32 // Rread, Rwrite
	rdata   []byte // where an Rread's data goes, set by the caller
	wqid    []plan9.Qid
	stat    []byte // Rstat, copied out of the reader's buffer
	msize   uint32 // Rversion
	version string // Rversion
}

func newCall(tag uint16) *call {
	return &call{tag: tag, done: make(chan struct{}, 1), buf: make([]byte, 0, 64)}
}

// failLocked completes cl with err if it is waiting for a reply.
// Conn.mu must be held.
func (cl *call) failLocked(err error) {
	if cl.state == stateWaiting {
		cl.state = stateReplied
		cl.err = err
		cl.done <- struct{}{}
	}
}

// result is the error of the reply: the connection's failure, or the
// server's Rerror text.
func (cl *call) result() error {
	if cl.err != nil {
		return cl.err
	}
	if cl.rtype == plan9.Rerror {
		return Error(cl.ename)
	}
	return nil
}

// get allocates a tag and its call for a new T-message of type ttype.
func (c *Conn) get(ttype uint8) (*call, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	var cl *call
	if n := len(c.freeTags); n > 0 {
		cl = c.calls[c.freeTags[n-1]]
		c.freeTags = c.freeTags[:n-1]
	} else if len(c.calls) < plan9.NOTAG {
		cl = newCall(uint16(len(c.calls)))
		c.calls = append(c.calls, cl)
	} else {
		c.mu.Unlock()
		return nil, errs.E(errs.Busy, "too many outstanding 9P requests")
	}
	cl.state = stateWaiting
	c.mu.Unlock()
	cl.begin(ttype)
	return cl, nil
}

// put releases cl's tag. The caller must have received cl's reply (or its
// Rflush) and be done with the reply fields.
func (c *Conn) put(cl *call) {
	cl.err, cl.ename, cl.rdata = nil, "", nil
	c.mu.Lock()
	if cl.state != stateFree {
		cl.state = stateFree
		c.freeTags = append(c.freeTags, cl.tag)
	}
	c.mu.Unlock()
}

// rpc sends cl's message (and payload) and waits for the reply. If ctx is
// cancelled first, it flushes the request. The caller must put cl.
func (c *Conn) rpc(ctx context.Context, cl *call, payload []byte) error {
	if err := ctx.Err(); err != nil {
		// Nothing sent yet: release the tag as if flushed.
		c.mu.Lock()
		cl.failLocked(errs.E(errs.Interrupted, err))
		c.mu.Unlock()
		<-cl.done
		return cl.result()
	}
	c.send(cl, payload)
	select {
	case <-cl.done:
		return cl.result()
	case <-ctx.Done():
		return c.flush(cl, ctx.Err())
	}
}

// flush sends Tflush for cl and waits for the Rflush, as 9P requires before
// the tag may be reused. A reply to cl that arrives first is honoured: the
// operation happened, so a successful reply is returned as success.
func (c *Conn) flush(cl *call, cause error) error {
	fl, err := c.get(plan9.Tflush)
	if err != nil {
		// The connection is dead, and fail has completed cl.
		<-cl.done
		return cl.result()
	}
	fl.put16(cl.tag)
	c.send(fl, nil)
	<-fl.done
	c.put(fl)

	c.mu.Lock()
	replied := cl.state == stateReplied
	if !replied {
		cl.state = stateFlushed
	}
	c.mu.Unlock()
	if !replied {
		return errs.E(errs.Interrupted, cause)
	}
	<-cl.done
	switch {
	case cl.err != nil:
		return cl.err
	case cl.rtype == plan9.Rerror:
		// The request failed, most likely because of the flush itself.
		return errs.E(errs.Interrupted, cl.ename)
	}
	return nil
}

// Message building. begin starts a T-message with a size placeholder that
// send fills in.

func (cl *call) begin(ttype uint8) {
	cl.ttype = ttype
	cl.buf = append(cl.buf[:0], 0, 0, 0, 0, ttype, byte(cl.tag), byte(cl.tag>>8))
}

func (cl *call) put8(v uint8)   { cl.buf = append(cl.buf, v) }
func (cl *call) put16(v uint16) { cl.buf = binary.LittleEndian.AppendUint16(cl.buf, v) }
func (cl *call) put32(v uint32) { cl.buf = binary.LittleEndian.AppendUint32(cl.buf, v) }
func (cl *call) put64(v uint64) { cl.buf = binary.LittleEndian.AppendUint64(cl.buf, v) }

func (cl *call) putString(s string) {
	cl.put16(uint16(len(s)))
	cl.buf = append(cl.buf, s...)
}
