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

// NewEcho starts an echo server on a socket in dir, in this process, and
// connects to it (the floor of the in-process Go benchmarks).
func NewEcho(dir string) (*Echo, error) {
	ln, err := net.Listen("unix", filepath.Join(dir, "echo.sock"))
	if err != nil {
		return nil, err
	}
	go serveEcho(ln)
	e, err := DialEcho(ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	e.ln = ln
	return e, nil
}

// DialEcho connects to an echo server on the unix socket sock (ServeEcho,
// in a process of its own: the floor of `ollie bench`).
func DialEcho(sock string) (*Echo, error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	return &Echo{conn: conn, msg: make([]byte, EchoSize)}, nil
}

// ServeEcho serves echo on the unix socket sock until the process ends:
// `ollie benchecho`, the floor `ollie bench` starts.
func ServeEcho(sock string) error {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	serveEcho(ln)
	return nil
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

// Close closes the connection, and stops the server if it is this
// process's.
func (e *Echo) Close() error {
	err := e.conn.Close()
	if e.ln != nil {
		err = e.ln.Close()
	}
	return err
}
