package session

import "strings"

// State is what a session is doing.
type State string

const (
	Idle        State = "idle"
	Running     State = "running"
	CallingTool State = "calling execute_code"
	Compacting  State = "compacting"
	Waiting     State = "waiting" // rate limited or retrying
	Asking      State = "asking"  // waiting for consent in ask/
	Error       State = "error"   // the last turn failed; a new prompt clears it
)

// Busy reports whether a turn is in progress in state s.
func (s State) Busy() bool { return s != Idle && s != Error }

var states = []State{Idle, Running, CallingTool, Compacting, Waiting, Asking, Error}

// ParseState reads a state as written in the state file.
func ParseState(s string) (State, bool) {
	s = strings.TrimSpace(s)
	for _, st := range states {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// notifier lets readers block until something changes. Changes close the
// current channel and make a new one; readers wait on the channel they
// saw before checking the condition, so no change is missed.
type notifier struct{ ch chan struct{} }

func newNotifier() notifier { return notifier{ch: make(chan struct{})} }

func (n *notifier) wait() <-chan struct{} { return n.ch }

func (n *notifier) broadcast() {
	close(n.ch)
	n.ch = make(chan struct{})
}
