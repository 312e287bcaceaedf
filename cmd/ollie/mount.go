package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"

	"ollie.dev/ollie/internal/dial"
	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/ninep/client"
)

var mountFlags struct {
	debug       bool
	noReconnect bool
	allowOther  bool
	token       string
}

func init() {
	register(&command{
		name:  "mount",
		args:  "[-debug] [-noreconnect] [-allow-other] [-token FILE] [DIR [ADDR]]",
		short: "mount the ollie tree on DIR through FUSE",
		long: `
Mount serves the daemon's file tree on DIR (default: the configured mount
point, ~/mnt/ollie) until interrupted (SIGINT, SIGTERM) or unmounted with
umount DIR. ADDR is the daemon's address: a unix socket path (default: the
configured socket), unix!PATH, or tcp!HOST!PORT for a remote daemon.
Over TCP the connection is TLS, the daemon's certificate is pinned on
first use in known_hosts in ollie's config directory, and the daemon's
token is presented: the file named by -token, else $OLLIE_TOKEN_FILE,
else the token file in ollie's config directory. docs/remote.md tells
how to serve and mount remotely, and the ssh alternative.

If the daemon restarts, the mount reconnects on the next file operation;
with -noreconnect it unmounts and exits with an error instead. Errors the
daemon reports (e.g. a rejected ctl command) are logged here in full, while
the program that caused them sees an errno. See docs/mount.md.`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&mountFlags.debug, "debug", false, "log every FUSE request")
			fs.BoolVar(&mountFlags.noReconnect, "noreconnect", false, "exit when the connection to the daemon is lost")
			fs.BoolVar(&mountFlags.allowOther, "allow-other", false, "let other users use the mount")
			declareToken(fs, &mountFlags.token)
		},
		run: runMount,
	})
}

func runMount(ctx context.Context, env *Env, args []string) error {
	if len(args) > 2 {
		return usagef("too many arguments")
	}
	dir, addr := env.Config.Mount, dial.LocalSocket(env.Config)
	if len(args) > 0 {
		dir = args[0]
	}
	if len(args) > 1 {
		addr = args[1]
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0700); err != nil {
			return err
		}
	}
	logger := log.New(env.Stderr, "", log.LstdFlags)
	d := env.dialer(mountFlags.token)
	connect := func(ctx context.Context) (*client.Conn, error) { return d.Dial(ctx, addr) }
	srv, err := fusebridge.Mount(ctx, dir, connect, fusebridge.Options{
		Uname:       userName(),
		Logf:        logger.Printf,
		NoReconnect: mountFlags.noReconnect,
		Debug:       mountFlags.debug,
		AllowOther:  mountFlags.allowOther,
	})
	if err != nil {
		return dial.Explain(addr, d.TokenFile, err)
	}
	fmt.Fprintf(env.Stderr, "ollie mount: %s on %s\n", addr, srv.Dir())
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if err := srv.Unmount(); err != nil {
			return err
		}
		return <-done
	}
}
