package testutil

import (
	"context"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
)

// EchoRunner stands in for the agent loop in tests of the daemon, the
// tree and the sessions, where the model is not the point: a turn answers
// "echo: PROMPT" at once, in chat, in the history and as the reply, with
// a usage of 10 tokens in, 3 out and one request. A prompt that starts
// with "block" first waits for Release (or a stop); one that starts with
// "fail" fails as an unavailable backend does.
type EchoRunner struct {
	// Before, if set, runs first in every turn; an error it returns ends
	// the turn with that error.
	Before func(ctx context.Context, t *session.Turn) error
	// Started receives the prompt of each turn as it begins, while it has
	// room (1000 prompts).
	Started chan string

	once    sync.Once
	release chan struct{}

	mu  sync.Mutex
	ran []string
}

// NewEchoRunner returns an EchoRunner whose blocked turns wait.
func NewEchoRunner() *EchoRunner {
	return &EchoRunner{Started: make(chan string, 1000), release: make(chan struct{})}
}

// Release lets every turn that blocks, now or later, finish. It may be
// called more than once.
func (r *EchoRunner) Release() { r.once.Do(func() { close(r.release) }) }

// Prompts returns the prompts of the turns begun so far, in order.
func (r *EchoRunner) Prompts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ran...)
}

func (r *EchoRunner) Run(ctx context.Context, t *session.Turn) error {
	r.mu.Lock()
	r.ran = append(r.ran, t.Prompt)
	r.mu.Unlock()
	select {
	case r.Started <- t.Prompt:
	default:
	}
	if r.Before != nil {
		if err := r.Before(ctx, t); err != nil {
			return err
		}
	}
	if strings.HasPrefix(t.Prompt, "block") {
		select {
		case <-r.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if strings.HasPrefix(t.Prompt, "fail") {
		return errs.E(errs.Unavailable, "backend said no")
	}
	answer := "echo: " + strings.TrimSpace(t.Prompt)
	t.Chat("assistant: " + answer + "\n")
	t.Append(map[string]string{"role": "assistant", "text": answer})
	t.AddUsage(session.Usage{Input: 10, Output: 3, Requests: 1})
	return t.SetReply(answer + "\n")
}

func (r *EchoRunner) Compact(ctx context.Context, t *session.Turn) error { return nil }
