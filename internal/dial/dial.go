// Package dial is how ollie's client programs (ollie's verbs, ollie-web)
// find and reach a daemon: the local socket, the token and pins for TCP,
// and errors that say what to do.
package dial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/ninep/client"
)

// The usage texts of the flags that name a daemon and its token, in every
// program that has them.
const (
	AddrUsage  = "daemon `ADDR`ess: a socket path, unix!PATH or tcp!HOST!PORT (default: the local daemon's socket)"
	TokenUsage = "for tcp!HOST!PORT: present the daemon's token in `FILE` (default: $OLLIE_TOKEN_FILE, else the token file in ollie's config directory)"
)

// Attach attaches through d to the daemon at addr, or to the local one
// (LocalSocket) when addr is "", with an error that says what to do.
func Attach(ctx context.Context, c *config.Config, d *client.Dialer, addr string) (*client.Fsys, error) {
	if addr == "" {
		addr = LocalSocket(c)
	}
	fsys, err := d.Mount(ctx, addr, User(), "")
	if err != nil {
		return nil, Explain(addr, d.TokenFile, err)
	}
	return fsys, nil
}

// LocalSocket finds the local daemon's socket: the configured one if it
// is there, else the one the daemon wrote into its state directory (a
// client started with a clean environment, as MCP hosts start servers,
// has no XDG_RUNTIME_DIR), else the usual runtime directories of this
// user. With none there, the configured path, for the error to name.
func LocalSocket(c *config.Config) string {
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

// Dialer is how a client reaches a daemon. The token file is tokenFile
// if set (a -token flag, $OLLIE_TOKEN_FILE), else the local daemon's; the
// pins are in the config directory. logf reports what the dialer learns
// (a pinned certificate).
func Dialer(c *config.Config, tokenFile string, logf func(string, ...any)) *client.Dialer {
	if tokenFile == "" {
		tokenFile = c.TokenFile()
	}
	return &client.Dialer{TokenFile: tokenFile, KnownHosts: c.KnownHosts(), Logf: logf}
}

// Error is a failure to reach a daemon, worded with what to do.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Explain rewords a failure to reach the daemon at addr with what to do.
func Explain(addr, tokenFile string, err error) error {
	const where = "the daemon's token is ~/.config/ollie/token on its host"
	switch {
	case errors.Is(err, client.ErrNoToken):
		return &Error{fmt.Sprintf("%v; %s: copy it to %s (mode 0600), or name a copy with -token FILE or OLLIE_TOKEN_FILE", err, where, tokenFile)}
	case errors.Is(err, client.ErrBadToken):
		return &Error{fmt.Sprintf("%v, which is not this daemon's; %s: name a copy of it with -token FILE or OLLIE_TOKEN_FILE", err, where)}
	}
	return NotRunning(addr, err)
}

// NotRunning rewords a failure to reach the local daemon.
func NotRunning(addr string, err error) error {
	if strings.Contains(err.Error(), "connect: no such file") || strings.Contains(err.Error(), "connection refused") {
		return &Error{"cannot reach the ollie daemon at " + addr + ": is it running? (ollie start)"}
	}
	return err
}

// User is the name a client attaches as: this process's user.
func User() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "none"
}
