// Package client is a 9P2000 client built for latency and cancellation.
//
// One Conn multiplexes many concurrent RPCs over one connection: callers
// write their T-messages under a write lock, and a single reader goroutine
// hands each R-message to the caller waiting on its tag. Every RPC takes a
// context; cancelling it sends a Tflush for the pending tag and returns
// once the server has acknowledged it, so a blocked read on a file like
// `wait` ends at once and the connection stays usable.
//
//	c, err := client.Dial(ctx, "unix", "/run/user/0/ollie/ollie.sock")
//	root, err := c.Attach(ctx, "glenda", "")
//	f, err := root.Walk(ctx, "s", "idx")
//	err = f.Open(ctx, plan9.OREAD)
//	n, err := f.ReadAt(ctx, buf, 0)
//	err = f.Clunk(ctx)
//
// Errors the server sends in Rerror are of type Error, whose text is the
// server's exactly, so errs.KindOf recovers their Kind. A flushed call fails
// with an errs.Interrupted error; a dead connection fails every pending and
// future call with an errs.Unavailable error (see ErrHungup).
package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// DefaultMsize is the message size the client asks for in Tversion: large
// enough that a typical FUSE read or write (128 KiB) is one Tread or Twrite.
const DefaultMsize = 128*1024 + plan9.IOHDRSZ

// minMsize is the smallest msize that leaves room for a stat in an Rstat.
const minMsize = 256

// ErrHungup is the cause of the error every call gets once the connection
// is dead: errors.Is(err, ErrHungup) tells a lost daemon from a refusal.
var ErrHungup = errors.New("i/o on hungup channel")

// Error is an error the server sent in an Rerror. Its text is the server's
// exactly, so errs.Parse can recover its Kind.
type Error string

func (e Error) Error() string { return string(e) }

// A Conn is a 9P2000 connection to a file server. Its methods are safe for
// concurrent use.
type Conn struct {
	rwc   io.ReadWriteCloser
	br    *bufio.Reader
	msize atomic.Uint32 // negotiated in Tversion; fixed afterwards
	dead  chan struct{} // closed when the connection dies
	auth  *remoteAuth   // set by Dialer.Dial for TCP: Attach authenticates (auth.go)

	wmu sync.Mutex // serializes whole messages on rwc

	// mu guards the fields below it. Lock order: Conn.mu only; it is never
	// held while doing I/O.
	mu       sync.Mutex
	err      error   // why the connection died; nil while alive
	calls    []*call // indexed by tag; tags are reused, calls with them
	freeTags []uint16
	vcall    *call // the Tversion call, which uses NOTAG
	nextFid  uint32
	freeFids []uint32
}

// Dial connects to the 9P server at addr and negotiates the protocol
// version. Network is "unix" or "tcp"; if it is empty or addr is a Plan 9
// dial string ("unix!/path", "tcp!host!port"), the network comes from addr,
// and a bare path means a unix socket (see ParseAddr).
func Dial(ctx context.Context, network, addr string) (*Conn, error) {
	if network == "" || containsBang(addr) {
		network, addr = ParseAddr(addr)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, errs.E(errs.Unavailable, err)
	}
	return newConn(ctx, nc, DefaultMsize)
}

// NewConn runs the 9P protocol over rwc, starting with Tversion. The Conn
// owns rwc from now on and closes it when it dies or is closed.
func NewConn(rwc io.ReadWriteCloser) (*Conn, error) {
	return newConn(context.Background(), rwc, DefaultMsize)
}

func newConn(ctx context.Context, rwc io.ReadWriteCloser, msize uint32) (*Conn, error) {
	c := &Conn{
		rwc:   rwc,
		br:    bufio.NewReaderSize(rwc, 64*1024),
		dead:  make(chan struct{}),
		vcall: newCall(plan9.NOTAG),
	}
	c.msize.Store(msize)
	go c.readLoop(msize)
	if err := c.version(ctx, msize); err != nil {
		c.fail(err)
		return nil, err
	}
	return c, nil
}

// version negotiates msize. Tversion cannot be flushed, so a cancelled ctx
// abandons the whole connection instead.
func (c *Conn) version(ctx context.Context, msize uint32) error {
	cl := c.vcall
	c.mu.Lock()
	cl.state = stateWaiting
	c.mu.Unlock()
	cl.begin(plan9.Tversion)
	cl.put32(msize)
	cl.putString(plan9.VERSION9P)
	c.send(cl, nil)
	select {
	case <-cl.done:
	case <-ctx.Done():
		return errs.E(errs.Interrupted, "version", ctx.Err())
	}
	if err := cl.result(); err != nil {
		return err
	}
	if cl.version != plan9.VERSION9P {
		return errs.E(errs.Unsupported, "server speaks "+cl.version+", not "+plan9.VERSION9P)
	}
	if cl.msize < minMsize || cl.msize > msize {
		return errs.E(errs.Other, "9P protocol botch: bad msize in Rversion")
	}
	c.msize.Store(cl.msize)
	return nil
}

// Msize returns the negotiated maximum message size.
func (c *Conn) Msize() uint32 { return c.msize.Load() }

// maxIO is the largest payload of one Tread or Twrite.
func (c *Conn) maxIO() int { return int(c.msize.Load()) - plan9.IOHDRSZ }

// Close closes the connection. Pending calls fail with ErrHungup.
func (c *Conn) Close() error {
	c.fail(errors.New("connection closed"))
	return nil
}

// Done returns a channel that is closed when the connection dies, whether
// by Close, an I/O error or a protocol error.
func (c *Conn) Done() <-chan struct{} { return c.dead }

// Err returns why the connection died, or nil while it is alive.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail marks the connection dead, completes every call still waiting for a
// reply with the error, and closes rwc so the reader stops. Only the first
// failure counts.
func (c *Conn) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = &errs.Error{Kind: errs.Unavailable, Detail: ErrHungup.Error(), Err: hungup{cause}}
	for _, cl := range c.calls {
		cl.failLocked(c.err)
	}
	c.vcall.failLocked(c.err)
	close(c.dead)
	c.mu.Unlock()
	c.rwc.Close()
}

// hungup wraps the cause of a connection's death so that errors.Is finds
// both ErrHungup and the cause.
type hungup struct{ cause error }

func (h hungup) Error() string   { return h.cause.Error() }
func (h hungup) Unwrap() []error { return []error{ErrHungup, h.cause} }

// send writes cl's message, followed by payload if any. A failed write
// leaves the stream in an unknown state, so it kills the connection; the
// caller learns of it by waiting on cl.done like for any reply.
func (c *Conn) send(cl *call, payload []byte) {
	size := len(cl.buf) + len(payload)
	if size > int(c.msize.Load()) {
		c.mu.Lock()
		cl.failLocked(errs.E(errs.TooLarge, "9P message exceeds msize"))
		c.mu.Unlock()
		return
	}
	binary.LittleEndian.PutUint32(cl.buf, uint32(size))
	c.wmu.Lock()
	var err error
	if len(payload) == 0 {
		_, err = c.rwc.Write(cl.buf)
	} else if len(payload) < 4096 {
		// One write beats writev for small payloads.
		cl.buf = append(cl.buf, payload...)
		_, err = c.rwc.Write(cl.buf)
	} else {
		bufs := net.Buffers{cl.buf, payload}
		_, err = bufs.WriteTo(c.rwc)
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(err)
	}
}

func containsBang(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '!' {
			return true
		}
	}
	return false
}
