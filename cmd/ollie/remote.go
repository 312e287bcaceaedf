package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"ollie.dev/ollie/internal/config"
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
		addr = localSocket(env.Config)
	}
	d := env.dialer(a.token)
	fsys, err := d.Mount(ctx, addr, userName(), "")
	if err != nil {
		return nil, remoteError(addr, d.TokenFile, err)
	}
	return fsys, nil
}

// dialer is how this process reaches a daemon. The token file is the
// -token flag's, else $OLLIE_TOKEN_FILE's (read in main), else the local
// daemon's; the pins are in the config directory.
func (env *Env) dialer(tokenFlag string) *client.Dialer {
	tok := tokenFlag
	if tok == "" {
		tok = env.TokenFile
	}
	if tok == "" {
		tok = env.Config.TokenFile()
	}
	return &client.Dialer{
		TokenFile:  tok,
		KnownHosts: env.Config.KnownHosts(),
		Logf:       func(format string, args ...any) { fmt.Fprintf(env.Stderr, "ollie: "+format+"\n", args...) },
	}
}

// remoteError rewords a failure to reach a daemon with what to do.
func remoteError(addr, tokenFile string, err error) error {
	const where = "the daemon's token is ~/.config/ollie/token on its host"
	switch {
	case errors.Is(err, client.ErrNoToken):
		return &cliError{fmt.Sprintf("%v; %s: copy it to %s (mode 0600), or name a copy with -token FILE or OLLIE_TOKEN_FILE", err, where, tokenFile)}
	case errors.Is(err, client.ErrBadToken):
		return &cliError{fmt.Sprintf("%v, which is not this daemon's; %s: name a copy of it with -token FILE or OLLIE_TOKEN_FILE", err, where)}
	}
	return notRunning(addr, err)
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

// localSocket finds the local daemon's socket: the configured one if it
// is there, else the one the daemon wrote into its state directory (a
// client started with a clean environment, as MCP hosts start servers,
// has no XDG_RUNTIME_DIR), else the usual runtime directories of this
// user. With none there, the configured path, for the error to name.
func localSocket(c *config.Config) string {
	if isSocket(c.Socket) {
		return c.Socket
	}
	if b, err := os.ReadFile(c.SocketFile()); err == nil {
		if p := strings.TrimSpace(string(b)); isSocket(p) {
			return p
		}
	}
	uid := strconv.Itoa(os.Getuid())
	for _, p := range []string{"/run/user/" + uid + "/ollie/ollie.sock", filepath.Join(os.TempDir(), "ollie-"+uid, "ollie.sock")} {
		if isSocket(p) {
			return p
		}
	}
	return c.Socket
}

func isSocket(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
