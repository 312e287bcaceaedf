package session

import (
	"fmt"
	"math"
	"time"
)

// waitNote is what a turn in state Waiting waits for.
type waitNote struct {
	why, backend string
	until        time.Time
}

// SetWaiting puts the turn in state Waiting until until, for why ("rate
// limited", "server unavailable") at backend. The state file then says
// so with the time left, counted down at each read: nothing is written
// while the wait lasts.
func (t *Turn) SetWaiting(why, backend string, until time.Time) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.changedStateLocked(s.sm.stepNote(Waiting, waitNote{why: why, backend: backend, until: until})); err != nil {
		s.m.logf("session %s: state %s: %v", s.id, Waiting, err)
	}
}

// StateText is the line of the state file: the state and, while a turn
// waits to retry, why, the time left and the backend, as in
// "waiting: rate limited, retry in 23s (backend openai)".
func (s *Session) StateText() string {
	st, w := s.sm.waiting()
	if st != Waiting || w.until.IsZero() {
		return string(st)
	}
	left := int(math.Ceil(time.Until(w.until).Seconds()))
	text := fmt.Sprintf("%s: %s, retry in %ds", st, w.why, max(0, left))
	if w.backend != "" {
		text += " (backend " + w.backend + ")"
	}
	return text
}
