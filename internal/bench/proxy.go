package bench

import (
	"context"
	"io"
	"net"
	"sync"
	"time"

	"ollie.dev/ollie/internal/ninep/client"
)

// A Proxy forwards TCP connections on loopback to a server and notes when
// each numbered piece of the streamed reply ("#0000042", see ingestText)
// passes towards the client: the moment the model sent it, as the daemon
// could first see it. A follower of the chat that notes when it reads
// each piece then knows how far behind the model it is.
type Proxy struct {
	ln     net.Listener
	target string

	mu   sync.Mutex
	sent map[int]time.Time
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, sent: map[int]time.Time{}}
	go p.serve()
	return p, nil
}

// Addr is the address to connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening.
func (p *Proxy) Close() error { return p.ln.Close() }

// Reset forgets the pieces seen so far.
func (p *Proxy) Reset() {
	p.mu.Lock()
	clear(p.sent)
	p.mu.Unlock()
}

// Sent returns when piece i passed, if it did.
func (p *Proxy) Sent(i int) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.sent[i]
	return t, ok
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
			var sc markerScanner
			buf := make([]byte, 64<<10)
			for {
				n, err := up.Read(buf)
				if n > 0 {
					now := time.Now()
					p.mu.Lock()
					sc.scan(buf[:n], func(i int) {
						if _, ok := p.sent[i]; !ok {
							p.sent[i] = now
						}
					})
					p.mu.Unlock()
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// A markerScanner finds "#" followed by seven digits in a stream of
// bytes cut anywhere.
type markerScanner struct {
	carry []byte
}

const markerLen = 8

func (s *markerScanner) scan(b []byte, found func(int)) {
	data := append(s.carry, b...)
	i := 0
	for ; i+markerLen <= len(data); i++ {
		if data[i] != '#' {
			continue
		}
		v, ok := 0, true
		for _, c := range data[i+1 : i+markerLen] {
			if c < '0' || c > '9' {
				ok = false
				break
			}
			v = v*10 + int(c-'0')
		}
		if ok {
			found(v)
			i += markerLen - 1
		}
	}
	s.carry = append(s.carry[:0], data[i:]...)
}

// follow reads the file at path through fsys as `tail -f` does, from
// offset 0 until stop is closed, and notes when it first saw each
// numbered piece. When a read finds nothing new it waits poll before the
// next.
func follow(ctx context.Context, fsys *client.Fsys, path string, poll time.Duration, stop <-chan struct{}) (map[int]time.Time, error) {
	seen := map[int]time.Time{}
	f, err := fsys.Open(ctx, path, 0)
	if err != nil {
		return nil, err
	}
	defer f.Clunk(ctx)
	var sc markerScanner
	buf := make([]byte, 64<<10)
	var off int64
	for {
		n, err := f.ReadAt(ctx, buf, off)
		if n > 0 {
			now := time.Now()
			off += int64(n)
			sc.scan(buf[:n], func(i int) {
				if _, ok := seen[i]; !ok {
					seen[i] = now
				}
			})
			continue
		}
		if err != nil && err != io.EOF {
			return seen, err
		}
		select {
		case <-stop:
			return seen, nil
		case <-time.After(poll):
		}
	}
}
