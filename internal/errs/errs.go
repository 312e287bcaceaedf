// Package errs is ollie's one error type. An error has a Kind, and each
// edge of the program maps the Kind once: the 9P server sends its text as
// Rerror.Ename, the FUSE bridge turns that text back into an errno, the CLI
// into an exit status, the agent loop into a retry decision.
//
// Wording follows Plan 9: lower case, no final punctuation. The text of an
// error is "kind" or "kind: detail", so a 9P client that only sees the
// string can recover the Kind with Parse.
package errs

import (
	"errors"
	"strings"
	"syscall"
)

// Kind classifies an error. The zero Kind is Other.
type Kind uint8

const (
	Other       Kind = iota // unclassified; maps to EIO
	NotExist                // file not found
	Exist                   // file exists
	Permission              // permission denied
	Invalid                 // bad input: a malformed write, name or value
	IsDir                   // is a directory
	NotDir                  // not a directory
	NotEmpty                // directory not empty
	Busy                    // in use (running session, busy mount point)
	Interrupted             // flushed or cancelled
	Unsupported             // operation not supported by this file
	TooLarge                // write or message too large
	Unavailable             // a backend or daemon could not be reached
	RateLimited             // a backend asked us to slow down
	Timeout                 // a deadline passed
)

// text is the canonical Plan 9 wording of each Kind. Parse depends on these
// strings being distinct and never a prefix of one another's detail.
var text = [...]string{
	Other:       "i/o error",
	NotExist:    "file not found",
	Exist:       "file exists",
	Permission:  "permission denied",
	Invalid:     "bad request",
	IsDir:       "is a directory",
	NotDir:      "not a directory",
	NotEmpty:    "directory not empty",
	Busy:        "file in use",
	Interrupted: "interrupted",
	Unsupported: "operation not supported",
	TooLarge:    "too large",
	Unavailable: "unavailable",
	RateLimited: "rate limited",
	Timeout:     "timed out",
}

func (k Kind) String() string {
	if int(k) < len(text) {
		return text[k]
	}
	return text[Other]
}

// Error is an error with a Kind and an optional detail.
type Error struct {
	Kind   Kind
	Detail string // human-readable specifics, Plan 9 style
	Err    error  // underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error of kind k. Args may be a string (the detail) and an
// error (the cause), in any order.
func E(k Kind, args ...any) error {
	e := &Error{Kind: k}
	for _, a := range args {
		switch a := a.(type) {
		case string:
			e.Detail = a
		case error:
			e.Err = a
		}
	}
	return e
}

// KindOf returns the Kind of err: the Kind of the first *Error in its chain,
// else a Kind recognized from a system errno, else Parse of its text.
func KindOf(err error) Kind {
	if err == nil {
		return Other
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var no syscall.Errno
	if errors.As(err, &no) {
		return fromErrno(no)
	}
	return Parse(err.Error())
}

// Is reports whether err has kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// Parse recovers the Kind of an error from its text, as received in a 9P
// Rerror. It understands ollie's own wording and the fixed messages of the
// srv9p library.
func Parse(msg string) Kind {
	head, _, _ := strings.Cut(msg, ": ")
	for k, t := range text {
		if head == t {
			return Kind(k)
		}
	}
	switch head {
	case "unknown fid", "file does not exist", "no such file or directory":
		return NotExist
	case "file already exists":
		return Exist
	case "not empty":
		return NotEmpty
	case "create prohibited", "write prohibited", "read prohibited", "remove prohibited",
		"wstat prohibited", "walk prohibited", "stat prohibited",
		"not open for read", "not open for write", "cannot remove root",
		"wstat cannot change type", "wstat cannot change dev", "wstat cannot change qid",
		"wstat cannot change muid", "wstat cannot change DMDIR bit":
		return Permission
	case "walk in non-directory", "create in non-directory":
		return NotDir
	case "flushed", "context canceled":
		return Interrupted
	case "bad offset", "bad count", "duplicate open", "duplicate fid", "duplicate tag",
		"clone of open fid", "bad directory in wstat":
		return Invalid
	case "unknown message":
		return Unsupported
	}
	return Other
}

// Errno maps a Kind to the errno a POSIX program sees.
func (k Kind) Errno() syscall.Errno {
	switch k {
	case NotExist:
		return syscall.ENOENT
	case Exist:
		return syscall.EEXIST
	case Permission:
		return syscall.EACCES
	case Invalid:
		return syscall.EINVAL
	case IsDir:
		return syscall.EISDIR
	case NotDir:
		return syscall.ENOTDIR
	case NotEmpty:
		return syscall.ENOTEMPTY
	case Busy:
		return syscall.EBUSY
	case Interrupted:
		return syscall.EINTR
	case Unsupported:
		return syscall.ENOTSUP
	case TooLarge:
		return syscall.EFBIG
	case Unavailable:
		return syscall.ENOTCONN
	case RateLimited:
		return syscall.EAGAIN
	case Timeout:
		return syscall.ETIMEDOUT
	}
	return syscall.EIO
}

func fromErrno(no syscall.Errno) Kind {
	switch no {
	case syscall.ENOENT:
		return NotExist
	case syscall.EEXIST:
		return Exist
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		return Permission
	case syscall.EINVAL, syscall.ENAMETOOLONG:
		return Invalid
	case syscall.EISDIR:
		return IsDir
	case syscall.ENOTDIR:
		return NotDir
	case syscall.ENOTEMPTY:
		return NotEmpty
	case syscall.EBUSY:
		return Busy
	case syscall.EINTR:
		return Interrupted
	case syscall.ENOTSUP:
		return Unsupported
	case syscall.EFBIG:
		return TooLarge
	case syscall.ETIMEDOUT:
		return Timeout
	}
	return Other
}
