package sandbox

import (
	"fmt"
	"syscall"
	"testing"
)

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails []error // returned in turn, then nil
		want  error
		calls int
	}{
		{"ok", nil, nil, 1},
		{"interrupted twice", []error{syscall.EINTR, syscall.EINTR}, nil, 3},
		{"wrapped", []error{fmt.Errorf("landlock_add_rule: %w", syscall.EINTR)}, nil, 2},
		{"other error", []error{syscall.EINTR, syscall.EPERM}, syscall.EPERM, 2},
	} {
		calls := 0
		f := func() error {
			calls++
			if calls <= len(tc.fails) {
				return tc.fails[calls-1]
			}
			return nil
		}
		if err := retry(f); err != tc.want || calls != tc.calls {
			t.Errorf("%s: got %v after %d calls, want %v after %d", tc.name, err, calls, tc.want, tc.calls)
		}
		calls = 0
		v, err := retry1(func() (int, error) { err := f(); return calls, err })
		if err != tc.want || calls != tc.calls || v != calls {
			t.Errorf("%s (retry1): got %d, %v after %d calls", tc.name, v, err, calls)
		}
	}
}
