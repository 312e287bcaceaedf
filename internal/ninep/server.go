// Package ninep serves a tree.Dir over 9P2000 using srv9p. It knows the
// tree's node interfaces and nothing about what the files mean.
//
// Per-fid state (the walked path, the open handle, a directory snapshot)
// lives in Fid.Aux; per-file state lives on the nodes.
package ninep

import (
	"bufio"
	"context"
	"io"
	"log"
	"sync"

	"9fans.net/go/plan9"
	"9fans.net/go/plan9/srv9p"

	"ollie.dev/ollie/internal/errs"
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

// fidState is the Aux of every fid.
type fidState struct {
	path []tree.Node // root first; the fid's file last

	mu     sync.Mutex
	h      tree.Handle // set while open, for files
	dir    []plan9.Dir // snapshot for reads of an open directory
	rclose bool        // ORCLOSE: remove at clunk
}

func (f *fidState) node() tree.Node { return f.path[len(f.path)-1] }

func state(fid *srv9p.Fid) *fidState {
	st, _ := fid.Aux().(*fidState)
	return st
}

// ServeConn serves one 9P conversation until in reaches EOF.
func (s *Server) ServeConn(in io.ReadCloser, out io.WriteCloser) {
	msize := s.Msize
	if msize == 0 {
		msize = DefaultMsize
	}
	s.Stats.Conns.Add(1)
	defer s.Stats.Conns.Add(-1)
	srv := &srv9p.Server{
		Msize:  msize,
		Trace:  s.Trace,
		Attach: s.attach,
		Walk:   s.walk,
		Open:   s.open,
		Create: s.create,
		Read:   s.read,
		Write:  s.write,
		Stat:   s.stat,
		Wstat:  s.wstat,
		Remove: s.remove,
		Clunk:  s.clunk,
		Sync:   s.sync,
	}
	// srv9p reads a message's size, then the rest: two reads per request
	// unless buffered. A buffer also takes several pipelined requests in
	// one read.
	srv.Serve(bufferedReader{bufio.NewReaderSize(in, 16*1024), in}, out)
}

// bufferedReader reads through a bufio.Reader and closes the underlying
// reader.
type bufferedReader struct {
	*bufio.Reader
	io.Closer
}

func (s *Server) attach(ctx context.Context, fid, afid *srv9p.Fid, user, aname string) (plan9.Qid, error) {
	s.Stats.Ops[opAttach].Add(1)
	if aname != "" && aname != "/" {
		return plan9.Qid{}, errs.E(errs.NotExist, "unknown attach name "+aname)
	}
	st, err := s.root.Stat()
	if err != nil {
		return plan9.Qid{}, err
	}
	fid.SetAux(&fidState{path: []tree.Node{s.root}})
	return st.Qid, nil
}

// walk implements Twalk. Unlike srv9p.Walk it also handles a multi-name
// walk of a fid onto itself: the path is only committed when complete.
func (s *Server) walk(ctx context.Context, fid, newfid *srv9p.Fid, names []string) ([]plan9.Qid, error) {
	s.Stats.Ops[opWalk].Add(1)
	old := state(fid)
	path := append(make([]tree.Node, 0, len(old.path)+len(names)), old.path...)
	qids := make([]plan9.Qid, 0, len(names))
	for _, name := range names {
		next, st, stated, err := step(path, name)
		if err != nil {
			if len(qids) == 0 {
				return nil, err
			}
			return qids, nil // partial walk: no error, fewer qids
		}
		if name == ".." {
			if len(path) > 1 {
				path = path[:len(path)-1]
			}
		} else {
			path = append(path, next)
		}
		if !stated {
			st, err = path[len(path)-1].Stat()
		}
		if err != nil {
			if len(qids) == 0 {
				return nil, err
			}
			return qids, nil
		}
		qids = append(qids, st.Qid)
	}
	newfid.SetAux(&fidState{path: path})
	return qids, nil
}

// step walks one name from the last node of path. It returns the child's
// stat too (stated) if the directory learnt it on the way (tree.StatWalker).
func step(path []tree.Node, name string) (n tree.Node, st plan9.Dir, stated bool, err error) {
	cur := path[len(path)-1]
	d, ok := cur.(tree.Dir)
	if !ok {
		return nil, st, false, errs.E(errs.NotDir, name)
	}
	switch name {
	case "..":
		if len(path) > 1 {
			return path[len(path)-2], st, false, nil
		}
		return cur, st, false, nil
	case ".", "":
		return nil, st, false, errs.E(errs.NotExist, "bad path element "+quote(name))
	}
	if sw, ok := d.(tree.StatWalker); ok {
		n, st, err = sw.WalkStat(name)
		return n, st, err == nil, err
	}
	n, err = d.Walk(name)
	return n, st, false, err
}

func quote(s string) string { return "\"" + s + "\"" }
