package ninep

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// The fixed messages of the protocol's own errors. Their wording is
// srv9p's, which errs.Parse knows, so clients map them as before.
var (
	errUnknownFid     = errors.New("unknown fid")
	errDuplicateFid   = errors.New("duplicate fid")
	errCloneOpenFid   = errors.New("clone of open fid")
	errWalkNonDir     = errors.New("walk in non-directory")
	errAttachMismatch = errors.New("attach does not match auth fid")
)

// fid is one fid of a connection.
type fid struct {
	// refs counts the fid table's reference and one for each request
	// running in a goroutine on the fid. The last to drop closes the open
	// handle, as a clunk must, but not under a request still using it.
	refs  atomic.Int32
	uname string          // immutable
	aname string          // immutable
	who   *tree.Principal // who walked it (guard.go); immutable

	// mu guards what follows: the requests of a fid may run concurrently,
	// and a Tcreate or a Topen in a goroutine changes what the reader's
	// next request on the fid sees.
	mu     sync.Mutex
	path   []tree.Node // root first; the fid's file last
	qid    plan9.Qid
	omode  int         // open mode, -1 if not open
	h      tree.Handle // set while open, for files
	dir    []plan9.Dir // snapshot for reads of an open directory
	dirOff int64       // the offset the next directory read must be at (or 0)
	dirIdx int         // the entry that read starts with
	rclose bool        // ORCLOSE: remove at clunk
}

func newFid(uname string, who *tree.Principal, path []tree.Node, qid plan9.Qid) *fid {
	f := &fid{uname: uname, who: who, path: path, qid: qid, omode: -1}
	f.refs.Store(1)
	return f
}

func (f *fid) node() tree.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.path[len(f.path)-1]
}

// drop drops a reference to f; the last one clunks it and returns the
// error of closing its handle: a message file commits at close, and a
// Tclunk answers with that error (NAMESPACE rule 1). A close that happens
// later, when a request still running on the fid ends, can tell no one.
func (c *conn) drop(f *fid) error {
	if f.refs.Add(-1) != 0 {
		return nil
	}
	// Counted here, as fids that ended: walks minus clunks is what the
	// connection holds.
	c.srv.Stats.Ops[opClunk].Add(1)
	f.mu.Lock()
	h, rclose, n := f.h, f.rclose, f.path[len(f.path)-1]
	f.h = nil
	f.mu.Unlock()
	var err error
	if h != nil {
		err = h.Close()
	}
	if rclose {
		if r, ok := n.(tree.Remover); ok {
			r.Remove(context.Background())
		}
	}
	return err
}

// serveConn serves the requests that make fids: Tversion, Tauth, Tattach
// and Twalk. They never block and always run in the reader, which owns
// the fid table.
func (c *conn) serveConn(r *request, b []byte) []byte {
	start := len(b)
	var err error
	switch r.typ {
	case plan9.Tversion:
		b = c.version(r, b)
	case plan9.Tauth:
		b, err = c.auth(r, b) // auth.go
	case plan9.Tattach:
		b, err = c.attach(r, b)
	case plan9.Twalk:
		b, err = c.walk(r, b)
	}
	return c.fit(b, start, r.tag, err)
}

// fit ends serving a request whose reply starts at b[start:]: on err, or
// if the reply is over msize (a stat or walk when msize is tiny), the
// reply becomes an Rerror.
func (c *conn) fit(b []byte, start int, tag uint16, err error) []byte {
	msize := c.msize.Load()
	if err == nil && len(b)-start > int(msize) {
		err = errs.E(errs.TooLarge, "reply over msize")
	}
	if err != nil {
		b = rerror(b[:start], tag, c.srv.ename(err), msize)
	}
	return b
}

// version negotiates the message size: the smaller of the client's and
// ours. It keeps the fids, as srv9p did.
func (c *conn) version(r *request, b []byte) []byte {
	v := "9P2000"
	if !strings.HasPrefix(r.name, "9P") {
		v = "unknown"
	}
	msize := min(r.msize, c.msize.Load())
	c.msize.Store(msize)
	start := len(b)
	b = putStr(put32(putHdr(b, plan9.Rversion, r.tag), msize), v)
	return finish(b, start)
}

func (c *conn) attach(r *request, b []byte) ([]byte, error) {
	if err := c.authorize(r); err != nil { // auth.go
		return b, err
	}
	if c.fids[r.fid] != nil {
		return b, errDuplicateFid
	}
	c.srv.Stats.Ops[opAttach].Add(1)
	who, err := c.attachWho(r.aname)
	var st plan9.Dir
	if err == nil {
		st, err = c.attachRoot(r.aname)
	}
	if err != nil {
		c.srv.Stats.Ops[opClunk].Add(1) // the fid made and dropped, as srv9p counted
		return b, err
	}
	c.fids[r.fid] = newFid(r.uname, who, []tree.Node{c.srv.root}, st.Qid)
	start := len(b)
	return finish(putQid(putHdr(b, plan9.Rattach, r.tag), st.Qid), start), nil
}

func (c *conn) attachRoot(aname string) (plan9.Dir, error) {
	if aname != "" && aname != "/" && !strings.HasPrefix(aname, pidAname) {
		return plan9.Dir{}, errs.E(errs.NotExist, "unknown attach name "+aname)
	}
	return c.srv.root.Stat()
}
