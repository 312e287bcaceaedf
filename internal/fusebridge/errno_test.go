package fusebridge

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// What a program sees through the mount for what happened. The daemon's
// errors arrive as client.Error, its Rerror text; the bridge's own are
// errs values.
func TestErrnoTable(t *testing.T) {
	for _, c := range []struct {
		what string
		err  error
		want syscall.Errno
	}{
		{"bad cfg value", client.Error("bad request: temperature=9: want a number from 0 to 2"), syscall.EINVAL},
		{"unknown backend", client.Error("bad request: no backend nope (configured: local)"), syscall.EINVAL},
		{"models: backend down", client.Error("unavailable: backend local: dial tcp 127.0.0.1:1: connect: connection refused"), syscall.EIO},
		{"backend timed out", client.Error("timed out: backend local"), syscall.ETIMEDOUT},
		{"backend rate limit", client.Error("rate limited: backend local"), syscall.EAGAIN},
		{"missing file", client.Error("file not found: nope"), syscall.ENOENT},
		{"too large", client.Error("too large: plan over 256 KiB"), syscall.EFBIG},
		{"refused", client.Error("permission denied: help is not writable"), syscall.EACCES},
		{"unknown text", client.Error("something odd"), syscall.EIO},
		{"daemon gone", &errs.Error{Kind: errs.Unavailable, Detail: client.ErrHungup.Error(), Err: client.ErrHungup}, syscall.ENOTCONN},
		{"redial failed", errs.E(errs.Unavailable, errors.New("dial unix /run/ollie.sock: connect: no such file or directory")), syscall.ENOTCONN},
		{"hung up, wrapped", fmt.Errorf("write: %w", errs.E(errs.Unavailable, client.ErrHungup)), syscall.ENOTCONN},
		{"remote unavailable, wrapped", errs.E(errs.Unavailable, "open models", client.Error("unavailable: backend x")), syscall.EIO},
	} {
		if got := errnoOf(c.err); got != c.want {
			t.Errorf("%s (%v): %v, want %v", c.what, c.err, got, c.want)
		}
	}
}
