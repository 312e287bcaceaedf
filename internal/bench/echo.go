package bench

import (
	"io"
	"net"
	"path/filepath"
)

// Echo is the floor of any protocol over a unix socket: a server that
// reads a fixed-size message and writes it back, nothing else, and a
// client connection to it. A 9P request cannot cost less than one of its
// round trips.
type Echo struct {
	ln   net.Listener
	conn net.Conn
	msg  []byte
}

// EchoSize is the size of an echo message: about that of the small 9P
// messages of a walk, open, read of a small file, or clunk.
const EchoSize = 32

// NewEcho starts an echo server on a socket in dir and connects to it.
func NewEcho(dir string) (*Echo, error) {
	ln, err := net.Listen("unix", filepath.Join(dir, "echo.sock"))
	if err != nil {
		return nil, err
	}
	go serveEcho(ln)
	conn, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &Echo{ln: ln, conn: conn, msg: make([]byte, EchoSize)}, nil
}

func serveEcho(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, EchoSize)
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
	}
}

// RoundTrips returns an operation that makes k round trips.
func (e *Echo) RoundTrips(k int) func() error {
	return func() error {
		for range k {
			if _, err := e.conn.Write(e.msg); err != nil {
				return err
			}
			if _, err := io.ReadFull(e.conn, e.msg); err != nil {
				return err
			}
		}
		return nil
	}
}

// Close stops the server.
func (e *Echo) Close() error {
	e.conn.Close()
	return e.ln.Close()
}
