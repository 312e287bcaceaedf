// Package ninep serves a tree.Dir over 9P2000. It knows the tree's node
// interfaces and nothing about what the files mean.
//
// The serve loop is our own; 9fans.net/go/plan9 provides the protocol's
// constants and the Dir and Qid types and their marshalling. We had used
// its srv9p, the dependency ARCHITECTURE.md chose, and replaced it for a
// measured reason (docs/bench.md): srv9p serves every request in a
// goroutine of its own, which readies a goroutine and wakes a thread per
// request, grows a stack, and allocates a context and a buffer of the
// full count. Over the daemon's socket a walk+open+read+clunk of a small
// file cost 2.7 times four bare round trips, a pread 2.75 times one. Here
// the connection's reader serves the requests that cannot block itself,
// from buffers it reuses: 1.96 and 1.41 times (medians of ten runs of
// ollie bench).
//
// What may block is for the tree to say (tree.OpensAtOnce and
// tree.Immediate, which go by type): a read of
// statewait blocks until flushed, an open of models asks the network, a
// write syncs to disk. Those run in goroutines, with a context that a
// Tflush cancels. The behaviour is srv9p's, error texts included (errs
// parses them), with these differences: a read of a fid not open fails
// (srv9p took the unopened mode for OEXEC and read nothing); a message of
// an unknown type, or malformed, is answered with an error instead of
// ending the conversation; a reply too big for msize becomes an error
// instead of being dropped; the requests still running when the
// connection ends are cancelled; and a connection's fids and outstanding
// requests are limited (limits.go), so that what a client can make the
// server hold is bounded, as is every allocation a message causes (by
// msize and by what arrived).
//
// Per-fid state (the walked path, the open handle, a directory snapshot)
// lives on the fid; per-file state lives on the nodes.
package ninep

import (
	"bufio"
	"io"
	"log"
	"sync"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/tree"
)

// Server serves one tree to any number of connections.
type Server struct {
	root  tree.Dir
	Stats Stats
	// Msize is the largest message size offered; 0 means DefaultMsize.
	Msize uint32
	// Log, if set, receives one line per connection error.
	Log   *log.Logger
	Trace io.Writer // protocol trace, for debugging

	// Guard decides what a stage may do (see guard.go); with none, a
	// stage may only walk and stat. Resolve says who a process is, for
	// attaches on behalf of a caller ("pid=N"); nil means the user.
	// Both are set before serving and never change.
	Guard   tree.Guard
	Resolve func(pid int) *tree.Principal

	// Redact, if set, cleans the text of every Rerror: an error may quote
	// a backend that echoed a key.
	Redact func(string) string
	// OnError, if set, is told of every failed open, create, read, write,
	// wstat, remove and close (clunk): who asked (nil: the user), the
	// file's path below the root and the error sent in the Rerror. It is
	// called from the connection's reader too, so it must not block.
	OnError func(who *tree.Principal, op, path string, err error)
}

// ename is the text of err as an Rerror sends it.
func (s *Server) ename(err error) string {
	if s.Redact != nil {
		return s.Redact(err.Error())
	}
	return err.Error()
}

// DefaultMsize lets a read or write move 128 KiB in one message: as much
// as one FUSE read or write, so that the mount turns each into one Tread
// or Twrite.
const DefaultMsize = 128*1024 + plan9.IOHDRSZ

// New returns a server for root.
func New(root tree.Dir) *Server { return &Server{root: root} }

// inSize is the connection's read buffer. Requests are small but for
// writes: a read fetches all that has arrived, several pipelined requests
// at once, and a message that fits is decoded where it lies. A larger
// Twrite is read into a buffer of its own.
const inSize = 16 * 1024

// ServeConn serves one 9P conversation until in reaches EOF or fails, or
// the client breaks the protocol. Requests still running then are
// cancelled, as if flushed, and every fid is clunked.
func (s *Server) ServeConn(in io.ReadCloser, out io.WriteCloser) {
	s.serveConn(in, out, nil, nil)
}

// serveConn serves a conversation with who (nil: the daemon's user) that
// must authenticate with tok, or needs not if tok is nil (auth.go).
func (s *Server) serveConn(in io.ReadCloser, out io.WriteCloser, who *tree.Principal, tok *Token) {
	msize := s.Msize
	if msize == 0 {
		msize = DefaultMsize
	}
	s.Stats.Conns.Add(1)
	defer s.Stats.Conns.Add(-1)
	c := &conn{
		srv:     s,
		in:      bufio.NewReaderSize(in, inSize),
		out:     out,
		fids:    map[uint32]*fid{},
		pending: map[uint16]*pending{},
		who:     who,
		token:   tok,
	}
	c.drained.L = &c.wmu
	c.msize.Store(msize)
	c.serve()
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log.Printf(format, args...)
	}
}

// bufPool holds reply buffers of requests served in goroutines, and
// buffers for messages too big for the connection's reader.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

func getBuf(n int) *[]byte {
	p := bufPool.Get().(*[]byte)
	if cap(*p) < n {
		*p = make([]byte, 0, n)
	}
	*p = (*p)[:0]
	return p
}

func putBuf(p *[]byte) { bufPool.Put(p) }
