package errs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// Every Kind survives the trip through a 9P Rerror: its text parses back
// to the same Kind, with or without detail.
func TestRoundTrip(t *testing.T) {
	for k := Other; k <= Timeout; k++ {
		for _, err := range []error{E(k), E(k, "some detail"), E(k, "detail", errors.New("cause"))} {
			if got := Parse(err.Error()); got != k {
				t.Errorf("Parse(%q) = %v, want %v", err.Error(), got, k)
			}
			if got := KindOf(fmt.Errorf("wrapped: %w", err)); got != k {
				t.Errorf("KindOf(wrapped %q) = %v", err, got)
			}
		}
	}
}

func TestSystemErrors(t *testing.T) {
	_, err := os.Open("/nonexistent/file")
	if KindOf(err) != NotExist || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("KindOf(%v) = %v", err, KindOf(err))
	}
	for no, k := range map[syscall.Errno]Kind{syscall.EACCES: Permission, syscall.EEXIST: Exist, syscall.ENOTEMPTY: NotEmpty, syscall.EISDIR: IsDir} {
		if KindOf(no) != k {
			t.Errorf("KindOf(%v) = %v, want %v", no, KindOf(no), k)
		}
		if k.Errno() != no {
			t.Errorf("%v.Errno() = %v, want %v", k, k.Errno(), no)
		}
	}
}

// The fixed messages of srv9p map to kinds a FUSE user sees sensibly.
func TestLibraryMessages(t *testing.T) {
	for msg, k := range map[string]Kind{
		"file not found":   NotExist,
		"unknown fid":      NotExist,
		"write prohibited": Permission,
		"flushed":          Interrupted,
		"duplicate open":   Invalid,
		"no idea what":     Other,
	} {
		if got := Parse(msg); got != k {
			t.Errorf("Parse(%q) = %v, want %v", msg, got, k)
		}
	}
}

// The edges of every Kind, written out: the 9P text it travels as and
// the errno a program sees through the mount. Changing a row is changing
// what users see; this table says it on purpose.
func TestEdgeTable(t *testing.T) {
	for _, row := range []struct {
		k     Kind
		text  string
		errno syscall.Errno
	}{
		{Other, "i/o error", syscall.EIO},
		{NotExist, "file not found", syscall.ENOENT},
		{Exist, "file exists", syscall.EEXIST},
		{Permission, "permission denied", syscall.EACCES},
		{Invalid, "bad request", syscall.EINVAL},
		{IsDir, "is a directory", syscall.EISDIR},
		{NotDir, "not a directory", syscall.ENOTDIR},
		{NotEmpty, "directory not empty", syscall.ENOTEMPTY},
		{Busy, "file in use", syscall.EBUSY},
		{Interrupted, "interrupted", syscall.EINTR},
		{Unsupported, "operation not supported", syscall.ENOTSUP},
		{TooLarge, "too large", syscall.EFBIG},
		{Unavailable, "unavailable", syscall.EIO}, // never ENOTCONN: that is a dead mount
		{RateLimited, "rate limited", syscall.EAGAIN},
		{Timeout, "timed out", syscall.ETIMEDOUT},
	} {
		err := E(row.k, "detail")
		if got := err.Error(); got != row.text+": detail" {
			t.Errorf("%v: text %q, want %q", row.k, got, row.text+": detail")
		}
		if got := Parse(err.Error()).Errno(); got != row.errno {
			t.Errorf("%v: errno %v after the 9P trip, want %v", row.k, got, row.errno)
		}
	}
	if int(Timeout)+1 != len(kinds) {
		t.Errorf("the table above misses a Kind")
	}
}

// Errnos from the system map back to the Kind that means them; EIO is
// Other, not Unavailable, and a lost connection is Unavailable.
func TestFromErrno(t *testing.T) {
	for no, k := range map[syscall.Errno]Kind{syscall.EIO: Other, syscall.EPERM: Permission, syscall.EROFS: Permission,
		syscall.ENAMETOOLONG: Invalid, syscall.ENOTCONN: Unavailable, syscall.ECONNREFUSED: Unavailable,
		syscall.EAGAIN: RateLimited, syscall.ETIMEDOUT: Timeout, syscall.ENOSPC: Other} {
		if got := KindOf(no); got != k {
			t.Errorf("KindOf(%v) = %v, want %v", no, got, k)
		}
	}
}
