package client

import (
	"context"
	"io"
	"sync/atomic"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// A Fid is a reference to a file on the server. Open and Create change
// what a Fid refers to and must not run concurrently with its other
// methods; once a Fid is open, ReadAt, WriteAt, Stat and Wstat may be
// called concurrently.
type Fid struct {
	c      *Conn
	num    uint32
	qid    plan9.Qid
	iounit uint32
	mode   int16 // open mode, -1 while not open

	diroff int64 // next Dirread offset; srv9p insists on sequential directory reads

	ended atomic.Bool // clunked or removed
}

// Attach introduces uname to the server and returns a fid for the root of
// the tree aname (usually "").
func (c *Conn) Attach(ctx context.Context, uname, aname string) (*Fid, error) {
	afid, err := c.authenticate(ctx, uname, aname) // auth.go
	if err != nil {
		return nil, err
	}
	if afid != nil {
		defer afid.Clunk(context.WithoutCancel(ctx))
	}
	f, err := c.newFid()
	if err != nil {
		return nil, err
	}
	cl, err := c.get(plan9.Tattach)
	if err != nil {
		c.freeFid(f.num)
		return nil, err
	}
	defer c.put(cl)
	cl.put32(f.num)
	cl.put32(afid.fidNum())
	cl.putString(uname)
	cl.putString(aname)
	if err := c.rpc(ctx, cl, nil); err != nil {
		c.freeFid(f.num)
		return nil, err
	}
	f.qid = cl.qid
	return f, nil
}

func (c *Conn) newFid() (*Fid, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	f := &Fid{c: c, mode: -1}
	if n := len(c.freeFids); n > 0 {
		f.num = c.freeFids[n-1]
		c.freeFids = c.freeFids[:n-1]
	} else {
		f.num = c.nextFid
		c.nextFid++
		if c.nextFid == plan9.NOFID {
			return nil, errs.E(errs.Busy, "out of fids")
		}
	}
	return f, nil
}

func (c *Conn) freeFid(num uint32) {
	c.mu.Lock()
	c.freeFids = append(c.freeFids, num)
	c.mu.Unlock()
}

// Conn returns the connection f belongs to.
func (f *Fid) Conn() *Conn { return f.c }

// Qid returns the qid of the file, as of the walk, open or create that
// made f refer to it.
func (f *Fid) Qid() plan9.Qid { return f.qid }

// Iounit returns the largest count that one Tread or Twrite on the open
// fid can move: the server's iounit, or what the msize allows.
func (f *Fid) Iounit() uint32 {
	if max := uint32(f.c.maxIO()); f.iounit == 0 || f.iounit > max {
		return max
	}
	return f.iounit
}

// Walk returns a new fid for the file reached by walking names from f.
// With no names it clones f. It fails with a "file not found" error unless
// every name was walked.
func (f *Fid) Walk(ctx context.Context, names ...string) (*Fid, error) {
	if len(names) <= plan9.MAXWELEM {
		return f.walk(ctx, names)
	}
	// A Twalk takes at most MAXWELEM names. Walking a fid onto itself is
	// not universally supported (srv9p.Walk refuses it), so each further
	// step walks to a fresh fid and clunks the previous one.
	nf, err := f.walk(ctx, names[:plan9.MAXWELEM])
	for names = names[plan9.MAXWELEM:]; err == nil && len(names) > 0; {
		k := min(len(names), plan9.MAXWELEM)
		var next *Fid
		next, err = nf.walk(ctx, names[:k])
		nf.Clunk(context.Background())
		nf, names = next, names[k:]
	}
	return nf, err
}

func (f *Fid) walk(ctx context.Context, names []string) (*Fid, error) {
	c := f.c
	nf, err := c.newFid()
	if err != nil {
		return nil, err
	}
	cl, err := c.get(plan9.Twalk)
	if err != nil {
		c.freeFid(nf.num)
		return nil, err
	}
	defer c.put(cl)
	cl.put32(f.num)
	cl.put32(nf.num)
	cl.put16(uint16(len(names)))
	for _, name := range names {
		cl.putString(name)
	}
	if err := c.rpc(ctx, cl, nil); err != nil {
		c.freeFid(nf.num)
		return nil, err
	}
	if len(cl.wqid) < len(names) {
		// A partial walk creates no fid.
		c.freeFid(nf.num)
		return nil, errs.E(errs.NotExist, names[len(cl.wqid)])
	}
	nf.qid = f.qid
	if len(names) > 0 {
		nf.qid = cl.wqid[len(names)-1]
	}
	return nf, nil
}

// Open opens f for I/O with a plan9 mode (OREAD, OWRITE, ORDWR, OEXEC,
// possibly with OTRUNC or ORCLOSE).
func (f *Fid) Open(ctx context.Context, mode uint8) error {
	c := f.c
	cl, err := c.get(plan9.Topen)
	if err != nil {
		return err
	}
	defer c.put(cl)
	cl.put32(f.num)
	cl.put8(mode)
	if err := c.rpc(ctx, cl, nil); err != nil {
		return err
	}
	f.qid, f.iounit, f.mode = cl.qid, cl.iounit, int16(mode)
	return nil
}

// Create creates name in the directory f and opens it with mode; f then
// refers to the new file.
func (f *Fid) Create(ctx context.Context, name string, perm plan9.Perm, mode uint8) error {
	c := f.c
	cl, err := c.get(plan9.Tcreate)
	if err != nil {
		return err
	}
	defer c.put(cl)
	cl.put32(f.num)
	cl.putString(name)
	cl.put32(uint32(perm))
	cl.put8(mode)
	if err := c.rpc(ctx, cl, nil); err != nil {
		return err
	}
	f.qid, f.iounit, f.mode = cl.qid, cl.iounit, int16(mode)
	return nil
}

// Read issues one Tread of at most Iounit bytes at off and returns what the
// server sent: possibly less than len(p), and io.EOF if nothing. Use it on
// streams and blocking files, where a short read is not the end.
func (f *Fid) Read(ctx context.Context, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c := f.c
	cl, err := c.get(plan9.Tread)
	if err != nil {
		return 0, err
	}
	defer c.put(cl)
	p = p[:min(len(p), int(f.Iounit()))]
	cl.rdata = p
	cl.put32(f.num)
	cl.put64(uint64(off))
	cl.put32(uint32(len(p)))
	if err := c.rpc(ctx, cl, nil); err != nil {
		return 0, err
	}
	if cl.count == 0 {
		return 0, io.EOF
	}
	return int(cl.count), nil
}

// ReadAt reads len(p) bytes at off with as many Treads as it takes, and
// returns io.EOF if the file ends first (a Tread returns nothing).
func (f *Fid) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := f.Read(ctx, p[n:], off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// WriteAt writes p at off with as many Twrites as it takes. Each Twrite
// takes effect on the server before the next is sent, and the first error
// stops the write.
func (f *Fid) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	n := 0
	for {
		k := min(len(p)-n, int(f.Iounit()))
		m, err := f.write(ctx, p[n:n+k], off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
		if m < k {
			return n, io.ErrShortWrite
		}
		if n == len(p) {
			return n, nil
		}
	}
}

func (f *Fid) write(ctx context.Context, p []byte, off int64) (int, error) {
	c := f.c
	cl, err := c.get(plan9.Twrite)
	if err != nil {
		return 0, err
	}
	defer c.put(cl)
	cl.put32(f.num)
	cl.put64(uint64(off))
	cl.put32(uint32(len(p)))
	if err := c.rpc(ctx, cl, p); err != nil {
		return 0, err
	}
	if int(cl.count) > len(p) {
		return 0, protocolError("Rwrite count %d for %d bytes", cl.count, len(p))
	}
	return int(cl.count), nil
}
