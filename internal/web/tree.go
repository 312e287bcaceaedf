package web

import (
	"context"
	"strings"
	"sync"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// The page's view of the tree: a few helpers over the 9P client, each
// one of the file operations a shell would do.

// read reads a whole file that does not block.
func (s *Server) read(ctx context.Context, p string) (string, error) {
	b, err := s.o.Fsys.ReadFile(ctx, p)
	return string(b), err
}

// put writes data to p as one message (one open, write and clunk),
// creating p if create is set and it does not exist. The error is the
// tree's own: a rejected agent file says why.
func (s *Server) put(ctx context.Context, p string, data []byte, create bool) error {
	fsys := s.o.Fsys
	f, err := fsys.Open(ctx, p, plan9.OWRITE|plan9.OTRUNC)
	if create && errs.Is(err, errs.NotExist) {
		f, err = fsys.Create(ctx, p, 0644, plan9.OWRITE)
	}
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.WriteAt(ctx, data, 0); err != nil {
			f.Clunk(context.Background())
			return err
		}
	}
	return f.Clunk(ctx)
}

// ctl writes one command to a session's ctl.
func (s *Server) ctl(ctx context.Context, id, cmd string) error {
	return s.put(ctx, "s/"+id+"/ctl", []byte(cmd+"\n"), false)
}

// create makes a session through the clone file s/new and returns its id.
func (s *Server) create(ctx context.Context, spec string) (string, error) {
	f, err := s.o.Fsys.Open(ctx, "s/new", plan9.ORDWR)
	if err != nil {
		return "", err
	}
	defer f.Clunk(context.Background())
	if _, err := f.WriteAt(ctx, []byte(spec), 0); err != nil {
		return "", err
	}
	b := make([]byte, 256)
	n, err := f.Read(ctx, b, 0)
	if n == 0 && err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b[:n])), nil
}

// conns spreads blocking reads over connections: a daemon runs at most
// 1024 requests of one connection at once, and each watched session
// holds one for as long as it lives.
type conns struct {
	s  *Server
	mu sync.Mutex
	cs []*pooled
}

type pooled struct {
	fsys *client.Fsys
	n    int
}

const perConn = 500

func (c *conns) get(ctx context.Context) (*pooled, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.cs {
		if p.n < perConn {
			p.n++
			return p, nil
		}
	}
	var fsys *client.Fsys
	if c.s.o.Dial == nil {
		if len(c.cs) > 0 {
			p := c.cs[0]
			p.n++
			return p, nil
		}
		fsys = c.s.o.Fsys
	} else {
		var err error
		if fsys, err = c.s.o.Dial(ctx); err != nil {
			return nil, err
		}
	}
	p := &pooled{fsys: fsys, n: 1}
	c.cs = append(c.cs, p)
	return p, nil
}

func (c *conns) put(p *pooled) {
	c.mu.Lock()
	p.n--
	c.mu.Unlock()
}

func (c *conns) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.cs {
		if p.fsys != c.s.o.Fsys {
			p.fsys.Close()
		}
	}
	c.cs = nil
}
