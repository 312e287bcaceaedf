package ninep

import (
	"context"

	"9fans.net/go/plan9"
)

// pending is a request served in a goroutine, or a Tflush waiting for
// one to reply.
type pending struct {
	req     request
	f       *fid
	big     *[]byte // the message, when it came in a buffer of its own
	ctx     context.Context
	cancel  context.CancelFunc // nil for a Tflush
	cost    int                // what admit reserved for it
	flushes []*pending         // Tflushes of this request; guarded by conn.mu
}

// start runs r, admitted at cost, in a goroutine of its own.
func (c *conn) start(r *request, f *fid, big *[]byte, cost int) {
	p := &pending{req: *r, f: f, big: big, cost: cost}
	p.req.wname = nil // never a Twalk
	if big == nil && p.req.data != nil {
		p.req.data = append([]byte(nil), r.data...) // it aliases the input buffer
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	c.mu.Lock()
	c.pending[r.tag] = p
	c.mu.Unlock()
	c.srv.Stats.Pending.Add(1)
	go func() {
		buf := getBuf(0)
		b := c.run(p.ctx, &p.req, f, *buf)
		if p.req.typ != plan9.Tclunk && p.req.typ != plan9.Tremove {
			c.drop(f) // those two dropped the table's reference themselves
		}
		c.reply(p, b)
		p.cancel()
		*buf = b
		putBuf(buf)
		if p.big != nil {
			putBuf(p.big)
		}
	}()
}

// reply writes the reply b of a pending request, then the Rflush of
// every Tflush that waited for it.
func (c *conn) reply(p *pending, b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.roomLocked() // before the tag is retired: see conn.wmu
	c.mu.Lock()
	b = c.retireLocked(p, b)
	c.running--
	c.pendingBytes -= p.cost
	c.mu.Unlock()
	c.srv.Stats.Pending.Add(-1)
	c.queueLocked(b)
}

// retireLocked frees p's tag and those of the Tflushes waiting for it (and
// for them), appending their Rflushes to b.
func (c *conn) retireLocked(p *pending, b []byte) []byte {
	if c.pending[p.req.tag] == p {
		delete(c.pending, p.req.tag)
	}
	for _, fl := range p.flushes {
		b = empty(b, plan9.Rflush, fl.req.tag)
		b = c.retireLocked(fl, b)
	}
	p.flushes = nil
	return b
}

// flush serves a Tflush. A request still running is cancelled, and the
// Rflush waits for its reply; any other tag is answered at once.
func (c *conn) flush(r *request) {
	c.mu.Lock()
	if _, dup := c.pending[r.tag]; dup {
		c.mu.Unlock()
		c.obuf = rerror(c.obuf, r.tag, "duplicate tag", c.msize.Load())
		return
	}
	old := c.pending[r.oldtag]
	if old == nil {
		c.mu.Unlock()
		c.obuf = empty(c.obuf, plan9.Rflush, r.tag)
		return
	}
	if old.cancel != nil {
		old.cancel()
		c.srv.Stats.Flushed.Add(1)
	}
	fl := &pending{req: request{typ: plan9.Tflush, tag: r.tag}}
	old.flushes = append(old.flushes, fl)
	c.pending[r.tag] = fl
	c.mu.Unlock()
}
