package main

import (
	"context"
	"flag"
	"os/user"
	"path"
	"strings"

	"ollie.dev/ollie/internal/ninep/client"
)

// addrFlag is the -addr flag of the verbs that speak 9P to a daemon.
type addrFlag struct{ addr string }

func (a *addrFlag) declare(fs *flag.FlagSet) {
	fs.StringVar(&a.addr, "addr", "", "daemon `ADDR`ess: a socket path, unix!PATH or tcp!HOST!PORT (default: the local daemon's socket)")
}

// dial attaches to the daemon named by the flag, or the local one.
func (a *addrFlag) dial(ctx context.Context, env *Env) (*client.Fsys, error) {
	addr := a.addr
	if addr == "" {
		addr = env.Config.Socket
	}
	fsys, err := client.Mount(ctx, addr, userName(), "")
	if err != nil {
		return nil, notRunning(addr, err)
	}
	return fsys, nil
}

// notRunning rewords a failure to reach the local daemon.
func notRunning(addr string, err error) error {
	if strings.Contains(err.Error(), "connect: no such file") || strings.Contains(err.Error(), "connection refused") {
		return &cliError{"cannot reach the ollie daemon at " + addr + ": is it running? (ollie start)"}
	}
	return err
}

type cliError struct{ msg string }

func (e *cliError) Error() string { return e.msg }

// treePath cleans a path of the tree given on the command line: leading
// slashes are optional, and ".." never climbs above the root.
func treePath(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

func userName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "none"
}

// readTreeFile reads a whole file of the tree over 9P.
func readTreeFile(ctx context.Context, addr, p string) ([]byte, error) {
	fsys, err := client.Mount(ctx, addr, userName(), "")
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	return fsys.ReadFile(ctx, p)
}
