package testutil

import (
	"testing"
	"time"

	"ollie.dev/ollie/internal/ninep"
)

// HangTimeout bounds waits that exist only to turn a hang into a failure.
// It is no assertion on timing: a loaded machine may take long, and a
// correct program gets there.
const HangTimeout = 30 * time.Second

// Until polls cond until it holds, and fails the test if it never does.
// Tests wait for the condition they are about, not for a while.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(HangTimeout)
	for pause := 50 * time.Microsecond; !cond(); pause = min(2*pause, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: hung", what)
		}
		time.Sleep(pause)
	}
}

// Outstanding waits until the server has n requests running: a test's
// read has reached the server, and is blocked there, before the test
// interrupts it or makes it return.
func Outstanding(t testing.TB, st *ninep.Stats, n int64, what string) {
	t.Helper()
	Until(t, what+" reaching the server", func() bool { return st.Pending.Load() == n })
}
