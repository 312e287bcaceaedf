package session

import (
	"sync"
	"sync/atomic"
	"testing"

	"ollie.dev/ollie/internal/errs"
)

// Every state pair through every transition: what the rules allow
// changes the state and its version, what they refuse fails with a clear
// kind and changes nothing.
func TestMachineTransitions(t *testing.T) {
	for _, from := range states {
		for _, to := range states {
			for _, op := range []string{"begin", "step", "finish"} {
				m := newMachine()
				m.state, m.err = from, "old"
				v := m.version()
				var err error
				switch op {
				case "begin":
					err = m.begin(to)
				case "step":
					err = m.step(to)
				case "finish":
					if to != Idle && to != Error {
						continue
					}
					text := ""
					if to == Error {
						text = "failed"
					}
					err = m.finish(text)
				}
				var legal bool
				switch op {
				case "begin":
					legal = !from.Busy() && (to == Running || to == Compacting)
				case "step":
					legal = from.Busy() && to.Busy()
				case "finish":
					legal = from.Busy()
				}
				st, e := m.get()
				if !legal {
					if err == nil {
						t.Errorf("%s %s → %s: allowed", op, from, to)
					} else if k := errs.KindOf(err); k != errs.Busy && k != errs.Invalid {
						t.Errorf("%s %s → %s: error of kind %v: %v", op, from, to, k, err)
					}
					if st != from || e != "old" || m.version() != v {
						t.Errorf("%s %s → %s refused, yet the state is %s %q (version %d → %d)", op, from, to, st, e, v, m.version())
					}
					continue
				}
				if err != nil {
					t.Errorf("%s %s → %s: %v", op, from, to, err)
					continue
				}
				if st != to {
					t.Errorf("%s %s → %s: the state is %s", op, from, to, st)
				}
				if (st != from) != (m.version() != v) {
					t.Errorf("%s %s → %s: version %d → %d", op, from, to, v, m.version())
				}
				switch {
				case op == "begin" && e != "":
					t.Errorf("begin kept the last error %q", e)
				case op == "finish" && to == Error && e != "failed":
					t.Errorf("finish with an error: %q", e)
				case op == "step" && e != "old":
					t.Errorf("step changed the error to %q", e)
				}
			}
		}
	}
}

// A session loaded from disk is never busy: no turn runs after a load.
func TestMachineRestore(t *testing.T) {
	m := newMachine()
	m.restore(Running, "x")
	if st, e := m.get(); st != Idle || e != "" {
		t.Errorf("restored running as %s %q", st, e)
	}
	m.restore(Error, "backend said no")
	if st, e := m.get(); st != Error || e != "backend said no" {
		t.Errorf("restored error as %s %q", st, e)
	}
	if err := m.begin(Running); err != nil {
		t.Errorf("a failed session takes a new turn: %v", err)
	}
}

// Every waiter on a state sees the change from it, and a closed done
// ends a wait.
func TestMachineWaiters(t *testing.T) {
	m := newMachine()
	const n = 16
	var ready, wg sync.WaitGroup
	got := make(chan State, n)
	for w := 0; w < n; w++ {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			st, err := m.waitChange(Idle, nil)
			if err != nil {
				t.Error(err)
			}
			got <- st
		}()
	}
	ready.Wait() // some may not wait yet: they find the change made
	if err := m.begin(Running); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for w := 0; w < n; w++ {
		if st := <-got; st != Running {
			t.Errorf("a waiter saw %s", st)
		}
	}
	done := make(chan struct{})
	close(done)
	if _, err := m.waitChange(Running, done); !errs.Is(err, errs.Interrupted) {
		t.Errorf("a closed done: %v", err)
	}
}

// Concurrent turns and readers: every change goes through the rules, so
// a reader never sees an error without state error or the other way
// round, and exactly one of two racing begins wins.
func TestMachineConcurrent(t *testing.T) {
	m := newMachine()
	stop := spin(4, func(<-chan struct{}) bool {
		if st, e := m.get(); (st == Error) != (e != "") {
			t.Errorf("state %s with error %q", st, e)
			return false
		}
		return true
	})
	var won sync.WaitGroup
	for i := 0; i < 100; i++ {
		var wins atomic.Int32
		for g := 0; g < 2; g++ {
			won.Add(1)
			go func() {
				defer won.Done()
				if m.begin(Running) == nil {
					wins.Add(1)
				}
			}()
		}
		won.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("%d of two racing begins won", n)
		}
		for _, st := range []State{CallingTool, Waiting, Asking, Running} {
			if err := m.step(st); err != nil {
				t.Fatal(err)
			}
		}
		text := ""
		if i%3 == 0 {
			text = "failed"
		}
		if err := m.finish(text); err != nil {
			t.Fatal(err)
		}
	}
	stop()
}
