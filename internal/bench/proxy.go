package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
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
	pace   atomic.Int64 // SetPace's, in nanoseconds
	mark   atomic.Bool  // SetMarking's

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

// SetPace makes the proxy pass the stream one server-sent event at a
// time, each at least d after the one before, so that the client gets it
// at a known rate whatever the server's; 0 passes it as it comes.
func (p *Proxy) SetPace(d time.Duration) { p.pace.Store(int64(d)) }

// SetMarking makes the proxy note when each piece passes (Sent), which
// costs a look at each byte; without it the proxy only forwards.
func (p *Proxy) SetMarking(on bool) { p.mark.Store(on) }

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
			var next time.Time // paced: when the next event may go
			buf := make([]byte, 64<<10)
			for {
				n, err := up.Read(buf)
				if n > 0 {
					if werr := p.forward(c, buf[:n], &sc, &next); werr != nil {
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

// forward writes b to c, noting the pieces in it as sent when written
// (if marking): at once, or, paced, an event (up to a blank line) at a
// time.
func (p *Proxy) forward(c net.Conn, b []byte, sc *markerScanner, next *time.Time) error {
	pace, mark := time.Duration(p.pace.Load()), p.mark.Load()
	if pace == 0 && !mark {
		_, err := c.Write(b)
		return err
	}
	for len(b) > 0 {
		seg := b
		if pace > 0 {
			if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
				seg = b[:i+2]
			}
			if wait := time.Until(*next); wait > 0 {
				time.Sleep(wait)
			}
		}
		now := time.Now()
		if mark {
			p.mu.Lock()
			sc.scan(seg, func(i int) {
				if _, ok := p.sent[i]; !ok {
					p.sent[i] = now
				}
			})
			p.mu.Unlock()
		}
		if _, err := c.Write(seg); err != nil {
			return err
		}
		*next = now.Add(pace)
		b = b[len(seg):]
	}
	return nil
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

// followChat reads the file at path through fsys as `tail -f` does, from
// offset 0 until stop is closed, and notes when it first saw each
// numbered piece. When a read finds nothing new it waits poll before the
// next. Each Tread takes what is there, as tail's read(2) does: a ReadAt
// that went on reading until its 64 KiB were full stamped the pieces
// at the front of a fast stream when the last arrived, milliseconds
// late.
func followChat(ctx context.Context, fsys *client.Fsys, path string, poll time.Duration, stop <-chan struct{}) (map[int]time.Time, error) {
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
		n, err := f.Read(ctx, buf, off)
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
