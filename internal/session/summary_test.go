package session

import (
	"testing"
	"time"
)

func newTestSession(t *testing.T) (*Manager, *Session) {
	t.Helper()
	m, err := Open(Options{Dir: t.TempDir(), TrDir: t.TempDir(), DefaultAgent: "default"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.New(Spec{Cwd: t.TempDir(), Model: "m0"})
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestSummaryWithoutLock: Summary answers while the session's lock is
// held, as a Submit holds it across the fsync of a prompt; s/idx and the
// stats of s/ read it, so that they wait for no session.
func TestSummaryWithoutLock(t *testing.T) {
	_, s := newTestSession(t)
	s.mu.Lock()
	got := make(chan Summary, 1)
	go func() { got <- s.Summary() }()
	select {
	case sum := <-got:
		if sum.Meta.Model != "m0" || sum.State != Idle || sum.Meta.ID != s.ID() {
			t.Errorf("summary %+v", sum)
		}
	case <-time.After(30 * time.Second): // a guard against a deadlock, not a timing
		t.Error("Summary waited for the session's lock")
	}
	s.mu.Unlock()
}

// TestSummaryConcurrent: readers of Summary race with writers of the
// settings and the state (go test -race), and see each change.
func TestSummaryConcurrent(t *testing.T) {
	m, s := newTestSession(t)
	stop := spin(4, func(<-chan struct{}) bool {
		sum := s.Summary()
		_ = sum.Meta.Model + string(sum.State) + sum.Meta.Cwd
		return true
	})
	for i := 0; i < 50; i++ {
		if err := s.SetCfg(map[string]string{"model": "m" + string(rune('a'+i%26))}); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		if i%2 == 0 {
			s.changedStateLocked(s.sm.begin(Running))
		} else {
			s.changedStateLocked(s.sm.finish(""))
		}
		s.mu.Unlock()
	}
	if err := m.Rename(s.ID(), "renamed"); err != nil {
		t.Fatal(err)
	}
	stop()
	sum := s.Summary()
	if sum.Meta.Model != "mx" || sum.State != Idle || sum.Meta.Name != "renamed" {
		t.Errorf("after the changes: %+v", sum)
	}
}

// TestSummaryLoaded: a session loaded from disk publishes its summary.
func TestSummaryLoaded(t *testing.T) {
	m, s := newTestSession(t)
	l, err := m.load(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if sum := l.Summary(); sum.Meta.Model != "m0" || sum.Meta.Cwd != s.Meta().Cwd || sum.State != Idle {
		t.Errorf("loaded summary %+v", sum)
	}
}
