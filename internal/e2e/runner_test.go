package e2e_test

import (
	"context"
	"log"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

// testRunner stands in for the agent loop, the one part of the daemon a
// test replaces: it answers "echo: PROMPT" at once, or, for a prompt that
// starts with "block", after release (or when stopped).
type testRunner struct {
	mu      sync.Mutex
	release chan struct{}
	started chan string // the prompt of each turn that begins
}

func newRunner() *testRunner {
	return &testRunner{release: make(chan struct{}), started: make(chan string, 100)}
}

func (r *testRunner) Run(ctx context.Context, t *session.Turn) error {
	select {
	case r.started <- t.Prompt:
	default:
	}
	if strings.HasPrefix(t.Prompt, "block") {
		r.mu.Lock()
		rel := r.release
		r.mu.Unlock()
		select {
		case <-rel:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	answer := "echo: " + strings.TrimSpace(t.Prompt)
	t.Chat("assistant: " + answer + "\n")
	t.Append(map[string]string{"role": "assistant", "text": answer})
	t.AddUsage(session.Usage{Input: 10, Output: 3, Requests: 1})
	return t.SetReply(answer + "\n")
}

func (r *testRunner) Compact(ctx context.Context, t *session.Turn) error { return nil }

// releaseAll lets every blocked turn finish.
func (r *testRunner) releaseAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

// logWriter sends the daemon's log lines to the test's log buffer.
type logWriter struct{ l *testutil.LogBuf }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Logf("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func testLogger(l *testutil.LogBuf) *log.Logger { return log.New(logWriter{l}, "ollie: ", 0) }
