package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/mcpbridge"
)

// mcpServe is `ollie mcp serve`: ollie as an MCP server on stdin and
// stdout, each tool a few file operations over 9P on the daemon's tree.
func mcpServe(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("serve takes no arguments")
	}
	fsys, err := mcpFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	s := mcpbridge.NewOllieServer(fsys)
	err = s.Run(ctx, &mcp.IOTransport{Reader: readCloser{env.Stdin}, Writer: nopWriteCloser{env.Stdout}})
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil // the host hung up or we were interrupted: a normal end
	}
	return err
}

type readCloser struct{ io.Reader }

func (r readCloser) Close() error {
	if c, ok := r.Reader.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpProxy is `ollie mcp proxy`: the server of tg over streamable HTTP on
// a loopback address, until interrupted.
func mcpProxy(ctx context.Context, env *Env, tg mcpbridge.Target, args []string) error {
	if len(args) > 0 {
		return usagef("proxy takes no arguments")
	}
	if err := config.CheckListen(mcpFlags.listen); err != nil {
		return usagef("-listen: %v", err)
	}
	c, err := mcpbridge.Dial(ctx, tg)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := mcpbridge.NewProxy(ctx, c)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", mcpFlags.listen)
	if err != nil {
		return err
	}
	h, url := mcpbridge.HTTPHandler(s), "http://"+ln.Addr().String()+"/"
	if mcpFlags.private {
		// Anything on the machine may connect to a loopback port; only
		// who was told the path (the daemon, then the session's own
		// stages through s/<id>/mcp) can use the server.
		var b [16]byte
		rand.Read(b[:])
		url += hex.EncodeToString(b[:]) + "/"
		mux := http.NewServeMux()
		mux.Handle(strings.TrimPrefix(url, "http://"+ln.Addr().String()), h)
		h = mux
		fmt.Fprintln(env.Stdout, url)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if !mcpFlags.private {
		fmt.Fprintf(env.Stderr, "ollie mcp: serving %s on %s (pid %d)\n", tg.Name, url, os.Getpid())
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
