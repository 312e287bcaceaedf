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
	fs.StringVar(&a.addr, "addr", "", dial.AddrUsage)
	declareToken(fs, &a.token)
}

// declareToken declares -token, the token file for tcp addresses.
func declareToken(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "token", "", dial.TokenUsage)
}

// dial attaches to the daemon named by the flag, or the local one.
func (a *addrFlag) dial(ctx context.Context, env *Env) (*client.Fsys, error) {
	return dial.Attach(ctx, env.Config, env.dialer(a.token), a.addr)
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
