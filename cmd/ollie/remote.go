package main

import (
	"context"
	"flag"
	"fmt"
	"path"
	"strings"

	"ollie.dev/ollie/internal/dial"
	"ollie.dev/ollie/internal/ninep/client"
)

// addrFlag is the -addr and -token flags of the verbs that speak 9P to a
// daemon.
type addrFlag struct {
	addr  string
	token string
}

func (a *addrFlag) declare(fs *flag.FlagSet) {
	fs.StringVar(&a.addr, "addr", "", "daemon `ADDR`ess: a socket path, unix!PATH or tcp!HOST!PORT (default: the local daemon's socket)")
	declareToken(fs, &a.token)
}

// declareToken declares -token, the token file for tcp addresses.
func declareToken(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "token", "", "for tcp!HOST!PORT: present the daemon's token in `FILE` (default: $OLLIE_TOKEN_FILE, else the token file in ollie's config directory)")
}

// dial attaches to the daemon named by the flag, or the local one.
func (a *addrFlag) dial(ctx context.Context, env *Env) (*client.Fsys, error) {
	addr := a.addr
	if addr == "" {
		addr = dial.LocalSocket(env.Config)
	}
	d := env.dialer(a.token)
	fsys, err := d.Mount(ctx, addr, userName(), "")
	if err != nil {
		return nil, dial.Explain(addr, d.TokenFile, err)
	}
	return fsys, nil
}

// dialer is how this process reaches a daemon: the token file is the
// -token flag's, else $OLLIE_TOKEN_FILE's (read in main), else the local
// daemon's.
func (env *Env) dialer(tokenFlag string) *client.Dialer {
	tok := tokenFlag
	if tok == "" {
		tok = env.TokenFile
	}
	return dial.Dialer(env.Config, tok, func(format string, args ...any) { fmt.Fprintf(env.Stderr, "ollie: "+format+"\n", args...) })
}

type cliError struct{ msg string }

func (e *cliError) Error() string { return e.msg }

// treePath cleans a path of the tree given on the command line: leading
// slashes are optional, and ".." never climbs above the root.
func treePath(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

func userName() string { return dial.User() }

// readTreeFile reads a whole file of the tree over 9P.
func readTreeFile(ctx context.Context, addr, p string) ([]byte, error) {
	fsys, err := client.Mount(ctx, addr, userName(), "")
	if err != nil {
		return nil, err
	}
	defer fsys.Close()
	return fsys.ReadFile(ctx, p)
}
