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

// kinds is the one table of the edges: for each Kind, its canonical Plan 9
// wording (the head of the 9P Ename; Parse depends on these strings being
// distinct and never a prefix of one another's detail) and the errno a
// POSIX program sees through the mount. An errno must say what happened:
// ENOTCONN would mean a dead mount, ENOENT a missing file, so neither
// stands for a backend that cannot be reached or a name that is unknown.
var kinds = [...]struct {
	text  string
	errno syscall.Errno
}{
	Other:       {"i/o error", syscall.EIO},
	NotExist:    {"file not found", syscall.ENOENT},
	Exist:       {"file exists", syscall.EEXIST},
	Permission:  {"permission denied", syscall.EACCES},
	Invalid:     {"bad request", syscall.EINVAL},
	IsDir:       {"is a directory", syscall.EISDIR},
	NotDir:      {"not a directory", syscall.ENOTDIR},
	NotEmpty:    {"directory not empty", syscall.ENOTEMPTY},
	Busy:        {"file in use", syscall.EBUSY},
	Interrupted: {"interrupted", syscall.EINTR},
	Unsupported: {"operation not supported", syscall.ENOTSUP},
	TooLarge:    {"too large", syscall.EFBIG},
	// A backend (or MCP server) that cannot be reached or failed: the
	// daemon is fine, the request is not. The FUSE bridge alone answers
	// ENOTCONN, for its own lost connection to the daemon.
	Unavailable: {"unavailable", syscall.EIO},
	RateLimited: {"rate limited", syscall.EAGAIN},
	Timeout:     {"timed out", syscall.ETIMEDOUT},
}

func (k Kind) String() string {
	if int(k) < len(kinds) {
		return kinds[k].text
	}
	return kinds[Other].text
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
	for k, e := range kinds {
		if head == e.text {
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
	if int(k) < len(kinds) {
		return kinds[k].errno
	}
	return syscall.EIO
}

// fromErrno is the reverse of the table, the first Kind of an errno
// winning (EIO is Other), plus the errnos no Kind maps to.
func fromErrno(no syscall.Errno) Kind {
	switch no {
	case syscall.EPERM, syscall.EROFS:
		return Permission
	case syscall.ENAMETOOLONG:
		return Invalid
	case syscall.ENOTCONN, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EHOSTUNREACH, syscall.ENETUNREACH:
		return Unavailable
	}
	for k, e := range kinds {
		if e.errno == no {
			return Kind(k)
		}
	}
	return Other
}
