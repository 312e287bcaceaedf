package mcpcli

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
	"ollie.dev/ollie/internal/dial"
	"ollie.dev/ollie/internal/mcpbridge"
	"ollie.dev/ollie/internal/ninep/client"
)

// serve is `ollie mcp serve`: ollie as an MCP server on stdin and
// stdout, each tool a few file operations over 9P on the daemon's tree.
func (c *cli) serve(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usagef("serve takes no arguments")
	}
	fsys, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer fsys.Close()
	s := mcpbridge.NewOllieServer(fsys)
	err = s.Run(ctx, &mcp.IOTransport{Reader: readCloser{c.stdin}, Writer: nopWriteCloser{c.stdout}})
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

// proxy is `ollie mcp proxy`: the server of tg over streamable HTTP on
// a loopback address, until interrupted.
func (c *cli) proxy(ctx context.Context, tg mcpbridge.Target, args []string) error {
	if len(args) > 0 {
		return usagef("proxy takes no arguments")
	}
	if err := config.CheckListen(c.Listen); err != nil {
		return usagef("-listen: %v", err)
	}
	sc, err := mcpbridge.Dial(ctx, tg)
	if err != nil {
		return err
	}
	defer sc.Close()
	s, err := mcpbridge.NewProxy(ctx, sc)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	h, url := mcpbridge.HTTPHandler(s), "http://"+ln.Addr().String()+"/"
	if c.Private {
		// Anything on the machine may connect to a loopback port; only
		// who was told the path (the daemon, then the session's own
		// stages through s/<id>/mcp) can use the server.
		var b [16]byte
		rand.Read(b[:])
		url += hex.EncodeToString(b[:]) + "/"
		mux := http.NewServeMux()
		mux.Handle(strings.TrimPrefix(url, "http://"+ln.Addr().String()), h)
		h = mux
		fmt.Fprintln(c.stdout, url)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if !c.Private {
		fmt.Fprintf(c.stderr, "ollie mcp: serving %s on %s (pid %d)\n", tg.Name, url, os.Getpid())
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

// dial attaches to the daemon named by -addr, or the local one; the
// token file is -token's, else $OLLIE_TOKEN_FILE's.
func (c *cli) dial(ctx context.Context) (*client.Fsys, error) {
	tok := c.Token
	if tok == "" {
		tok = c.tokenFile
	}
	logf := func(format string, args ...any) { fmt.Fprintf(c.stderr, "ollie mcp: "+format+"\n", args...) }
	return dial.Attach(ctx, c.cfg, dial.Dialer(c.cfg, tok, logf), c.Addr)
}
