// Command ollie-web is ollie's browser front-end: `ollie web` runs it.
// It serves a page for the daemon's sessions on loopback and is one more
// 9P client of the daemon. See docs/web.md.
//
// It is a binary of its own, installed next to ollie, because its
// Markdown renderer and HTML sanitizer (goldmark, bluemonday) initialise
// tables and regular expressions at load: linked into ollie, every ollie
// process (the daemon, each verb a script or a tool runs) paid 6 ms and
// 1.7 MB for them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/dial"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Main runs ollie-web with args and returns its exit status: 2 for a
// mistake on the command line, 1 for any other failure.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ollie web", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgFile := fs.String("config", "", "read configuration from `FILE` instead of $XDG_CONFIG_HOME/ollie/ollie.json")
	listen := fs.String("addr", "127.0.0.1:0", "serve the page on `HOST:PORT` (loopback only; port 0 picks one)")
	daemon := fs.String("daemon", "", dial.AddrUsage)
	token := fs.String("token", "", dial.TokenUsage)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ollie web [-addr 127.0.0.1:PORT] [-daemon ADDR [-token FILE]]\n\n"+
			"Serve a browser front-end over the tree; see 'ollie help web' and docs/web.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ollie web: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := config.CheckListen(*listen); err != nil {
		fmt.Fprintf(stderr, "ollie web: -addr: %v\n", err)
		return 2
	}
	cfg, err := config.Load(config.OSEnv(), *cfgFile)
	if err != nil {
		fmt.Fprintf(stderr, "ollie web: %v\n", err)
		return 1
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "ollie web: "+format+"\n", args...) }
	tok := *token
	if tok == "" {
		tok = os.Getenv("OLLIE_TOKEN_FILE")
	}
	d := dial.Dialer(cfg, tok, logf)
	connect := func(ctx context.Context) (*client.Fsys, error) { return dial.Attach(ctx, cfg, d, *daemon) }
	if err := serve(ctx, connect, *listen, stdout, logf); err != nil {
		fmt.Fprintf(stderr, "ollie web: %v\n", err)
		return 1
	}
	return 0
}

// serve serves the page on listen until ctx ends or the daemon hangs up.
func serve(ctx context.Context, connect func(context.Context) (*client.Fsys, error), listen string, stdout io.Writer, logf func(string, ...any)) error {
	fsys, err := connect(ctx)
	if err != nil {
		return err
	}
	defer fsys.Close()
	ln, err := net.Listen("tcp", config.ListenAddr(listen))
	if err != nil {
		return err
	}
	srv, err := web.New(web.Options{Fsys: fsys, Dial: connect, Addr: ln.Addr().String(), Logf: logf})
	if err != nil {
		ln.Close()
		return err
	}
	if err := srv.Start(); err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()
	fmt.Fprintln(stdout, srv.URL())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case <-fsys.Root.Conn().Done():
		err = errors.New("the daemon hung up")
	case err = <-done:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Close()
	hs.Shutdown(sctx)
	return err
}
