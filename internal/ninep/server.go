// Package ninep serves a tree.Dir over 9P2000. It knows the tree's node
// interfaces and nothing about what the files mean.
//
// The serve loop is our own; 9fans.net/go/plan9 provides the protocol's
// constants and the Dir and Qid types. We had used its srv9p, which serves
// every request in a goroutine of its own. On a unix socket that made a
// walk+open+read+clunk of a small file 2.2-2.5 times the cost of four bare
// round trips, and a pread 1.9-2.2 times one: each request readied a new
// goroutine (waking an idle thread, growing a stack) and allocated a
// context and a buffer of the full count. Here the connection's reader
// serves the requests that cannot block itself, writing replies from a
// buffer it reuses; docs/bench.md has the numbers before and after.
//
// What may block is for the tree to say (tree.Prompter): a read of
// statewait blocks until flushed, an open of models asks the network, a
// write syncs to disk. Those run in goroutines, with a context that a
// Tflush cancels.
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
	}
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
