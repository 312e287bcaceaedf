package fusebridge

import (
	"syscall"

	"ollie.dev/ollie/internal/errs"
)

// errno is the one place where 9P errors become errnos. The errno is all a
// shell can show, so every error the user did not expect (anything but a
// missing file or an interrupt) is logged with the server's full text:
// `echo bogus > ctl` says "Invalid argument" in the shell and
// "bad request: unknown command bogus" in the mount's log.
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
	return k.Errno()
}
