package e2e_test

import (
	"log"
	"strings"

	"ollie.dev/ollie/internal/testutil"
)

// logWriter sends the daemon's log lines to the test's log buffer.
type logWriter struct{ l *testutil.LogBuf }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Logf("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func testLogger(l *testutil.LogBuf) *log.Logger { return log.New(logWriter{l}, "ollie: ", 0) }
