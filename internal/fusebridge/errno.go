package fusebridge

import (
	"errors"
	"syscall"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// errno is the one place where 9P errors become errnos. The errno is all a
// shell can show, so every error the user did not expect (anything but a
// missing file or an interrupt) is logged with the server's full text,
// and the daemon keeps the text in its errors file: `echo bogus > ctl`
// says "Invalid argument" in the shell, and `cat $OLLIE/errors` and the
// mount's log say "bad request: unknown command bogus".
func (b *bridge) errno(op, path string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	k := errs.KindOf(err)
	switch k {
	case errs.NotExist, errs.Interrupted:
	default:
		b.opts.Logf("ollie mount: %s /%s: %v", op, path, err)
	}
	return errnoOf(err)
}

// errnoOf maps an error to its errno through the table of internal/errs,
// but for one case the table cannot tell: ENOTCONN ("Transport endpoint
// is not connected") says the mount is dead, so it is kept for the
// bridge's own lost connection to the daemon. An error the daemon sent
// (client.Error) is never that, even of kind unavailable: a backend that
// cannot be reached is EIO, with its text in $OLLIE/errors.
func errnoOf(err error) syscall.Errno {
	k := errs.KindOf(err)
	if errors.Is(err, client.ErrHungup) {
		return syscall.ENOTCONN
	}
	var remote client.Error
	if k == errs.Unavailable && !errors.As(err, &remote) {
		return syscall.ENOTCONN
	}
	return k.Errno()
}
