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
