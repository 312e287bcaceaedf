package ninetest

import (
	"bufio"
	"io"
	"net"
	"os"
	"sync"
)

// A Listener serves a Tree on a socket, one srv9p server per connection.
type Listener struct {
	t  *Tree
	ln net.Listener

	mu    sync.Mutex
	conns map[net.Conn]bool
	done  bool
}

// Listen serves t on a new listener ("unix", path or "tcp", host:port).
// For a unix socket, a stale socket file is removed first, as a restarted
// daemon does.
func (t *Tree) Listen(network, addr string) (*Listener, error) {
	if network == "unix" {
		os.Remove(addr)
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	l := &Listener{t: t, ln: ln, conns: map[net.Conn]bool{}}
	go l.accept()
	return l, nil
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

func (l *Listener) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.done {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.conns[c] = true
		l.mu.Unlock()
		go func() {
			l.t.Server().Serve(bufferedReader(c), c)
			c.Close()
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
		}()
	}
}

// Close stops listening and drops every connection, as a daemon that dies
// does.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.done = true
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	return l.ln.Close()
}

// bufferedReader saves srv9p a read system call per message: it reads the
// 4-byte size and the rest of each message separately.
func bufferedReader(rc io.ReadCloser) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{bufio.NewReaderSize(rc, 64*1024), rc}
}

// Pipe serves t over a pair of os.Pipes and returns the client's end.
func (t *Tree) Pipe() (io.ReadWriteCloser, error) {
	sr, cw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cr, sw, err := os.Pipe()
	if err != nil {
		sr.Close()
		cw.Close()
		return nil, err
	}
	go func() {
		t.Server().Serve(sr, sw)
		sr.Close()
		sw.Close()
	}()
	return &pipeEnd{cr, cw}, nil
}

type pipeEnd struct {
	r *os.File
	w *os.File
}

func (p *pipeEnd) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeEnd) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeEnd) Close() error {
	p.w.Close()
	return p.r.Close()
}
