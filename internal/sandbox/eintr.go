package sandbox

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Every system call of a stage's setup goes through retry or retry1.
// The daemon's threads are signalled all the time (the Go runtime's
// preemption, SIGCHLD from stages), and a signal that lands during a call
// without SA_RESTART semantics makes it fail with EINTR: the seccomp
// listener's ioctls take an interruptible lock, opening a path on a FUSE
// or network file system can be interrupted, and a few other calls return
// EINTR directly. At 500 concurrent sessions that failed about one tool
// call in 400. None of these calls has done anything when it fails so,
// and all of them are safe to make again.

// retry calls f until it fails with something other than EINTR.
func retry(f func() error) error {
	for {
		err := f()
		if !isEINTR(err) {
			return err
		}
	}
}

// retry1 is retry for a call with a result.
func retry1[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if !isEINTR(err) {
			return v, err
		}
	}
}

// isEINTR sees EINTR through wrapping (go-landlock wraps its errors).
func isEINTR(err error) bool {
	return err != nil && errors.Is(err, syscall.EINTR)
}

// rawRetry is retry for a raw system call, which reports its errno.
func rawRetry(trap, a1, a2, a3 uintptr) (uintptr, unix.Errno) {
	for {
		r, _, e := unix.Syscall(trap, a1, a2, a3)
		if e != unix.EINTR {
			return r, e
		}
	}
}
