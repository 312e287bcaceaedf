package session

import (
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
)

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

// machine is a session's state and the rules of its changes:
//
//	idle, error ──begin──▶ running, compacting
//	busy        ──step───▶ any busy state (calling a tool, waiting, asking ...)
//	busy        ──finish─▶ idle, or error with the turn's error
//
// So a runner cannot make a session look idle while its turn runs, and
// nothing but the end of a turn makes it idle. A change that breaks the
// rules fails and changes nothing.
//
// mu is a leaf lock: the session changes the state with its own lock
// held, and readers (State, waiters) take only this one.
type machine struct {
	mu     sync.Mutex
	state  State
	err    string   // the error of the last turn, in state Error
	wait   waitNote // in state Waiting: what for and until when (waiting.go)
	ver    uint32   // bumped on every change
	notify notifier // every change
}

func newMachine() *machine { return &machine{state: Idle, notify: newNotifier()} }

// get returns the state and, in state Error, the error.
func (m *machine) get() (State, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.err
}

func (m *machine) version() uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ver
}

// restore sets the state a session had on disk (error, with the error of
// its last turn, or idle), before the session is shared.
func (m *machine) restore(st State, err string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.Busy() {
		st, err = Idle, "" // no turn runs after a load
	}
	m.state, m.err = st, err
}

// begin starts a turn: from idle or error to running or compacting. The
// last turn's error is cleared.
func (m *machine) begin(st State) error {
	if st != Running && st != Compacting {
		return errs.E(errs.Invalid, "a turn begins running or compacting, not "+string(st))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state.Busy() {
		return errs.E(errs.Busy, "a turn is already "+string(m.state))
	}
	m.err = ""
	m.setLocked(st)
	return nil
}

// step changes what a running turn does: from a busy state to another.
func (m *machine) step(st State) error { return m.stepNote(st, waitNote{}) }

// stepNote is step with what a turn in state Waiting waits for.
func (m *machine) stepNote(st State, note waitNote) error {
	if !st.Busy() {
		return errs.E(errs.Invalid, "only the end of a turn makes a session "+string(st))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.state.Busy() {
		return errs.E(errs.Invalid, "no turn runs (the session is "+string(m.state)+")")
	}
	m.setLocked(st)
	m.wait = note
	return nil
}

// waiting returns the state and, in state Waiting, what for.
func (m *machine) waiting() (State, waitNote) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.wait
}

// finish ends a turn: idle when errText is "", else error with errText.
func (m *machine) finish(errText string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.state.Busy() {
		return errs.E(errs.Invalid, "no turn runs (the session is "+string(m.state)+")")
	}
	m.err = errText
	if errText != "" {
		m.setLocked(Error)
	} else {
		m.setLocked(Idle)
	}
	return nil
}

func (m *machine) setLocked(st State) {
	if m.state == st {
		return
	}
	m.state = st
	m.wait = waitNote{}
	m.ver++
	m.notify.broadcast()
}

// waitChange blocks until the state differs from from, or done is closed.
func (m *machine) waitChange(from State, done <-chan struct{}) (State, error) {
	for {
		m.mu.Lock()
		st, ch := m.state, m.notify.wait()
		m.mu.Unlock()
		if st != from {
			return st, nil
		}
		select {
		case <-ch:
		case <-done:
			return st, errs.E(errs.Interrupted)
		}
	}
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
