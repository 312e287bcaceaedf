package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/web"
)

// webFlags: -addr is where the page is served (as the issue and the
// docs name it); the daemon is -daemon, which the other verbs call -addr.
var webFlags struct {
	daemon addrFlag
	listen string
}

func init() {
	register(&command{
		name:  "web",
		args:  "[-addr 127.0.0.1:PORT] [-daemon ADDR [-token FILE]]",
		short: "serve a browser front-end over the tree",
		long: `Serve a page for the daemon's sessions: the list, chats streaming live,
the prompt box, Stop, Queue and Compact, consent requests, the editable
files of m/ sk/ t/ a/, search across chats, and a timeline of turns. It
is one more 9P client of the daemon (the local one, or -daemon), doing the
same file I/O a shell does.

It listens on loopback only (port 0 picks a free one) and prints the
URL to open on its first line: it carries a token made fresh at every
start, which the page keeps in a cookie, and a secret path the page and
the cookie live under (cookies do not tell ports apart). A request
without the cookie gets 401, one outside the path 404.
'ollie start' starts it too when ollie.json has "web": "127.0.0.1:PORT"
(the URL is then in ollie.log). See docs/web.md.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&webFlags.listen, "addr", "127.0.0.1:0", "serve the page on `HOST:PORT` (loopback only; port 0 picks one)")
			fs.StringVar(&webFlags.daemon.addr, "daemon", "", "daemon `ADDR`ess: a socket path, unix!PATH or tcp!HOST!PORT (default: the local daemon's socket)")
			declareToken(fs, &webFlags.daemon.token)
		},
		run: runWeb,
	})
}

func runWeb(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if err := config.CheckListen(webFlags.listen); err != nil {
		return usagef("-addr: %v", err)
	}
	fsys, err := webFlags.daemon.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	ln, err := net.Listen("tcp", config.ListenAddr(webFlags.listen))
	if err != nil {
		return err
	}
	srv, err := web.New(web.Options{
		Fsys: fsys,
		Dial: func(ctx context.Context) (*client.Fsys, error) { return webFlags.daemon.dial(ctx, env) },
		Addr: ln.Addr().String(),
		Logf: func(format string, args ...any) { fmt.Fprintf(env.Stderr, "ollie web: "+format+"\n", args...) },
	})
	if err != nil {
		ln.Close()
		return err
	}
	if err := srv.Start(); err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()
	fmt.Fprintln(env.Stdout, srv.URL())
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
