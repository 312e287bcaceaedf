package session

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"ollie.dev/ollie/internal/errs"
)

func TestAsks(t *testing.T) {
	var as asks
	id1, a1 := as.add("run rm?")
	id2, a2 := as.add("fetch x?")
	if fmt.Sprint(as.ids()) != fmt.Sprint([]int{id1, id2}) || id1 == id2 {
		t.Fatalf("ids %v", as.ids())
	}
	if txt, ok := as.text(id2); !ok || txt != "fetch x?" {
		t.Errorf("text %q %v", txt, ok)
	}
	if err := as.answer(id2, true); err != nil {
		t.Fatal(err)
	}
	if !<-a2 {
		t.Error("allow came as deny")
	}
	// Answered once: a second answer, or one for no request, finds none.
	for _, id := range []int{id2, 99, 0, -1} {
		if err := as.answer(id, false); !errs.Is(err, errs.NotExist) {
			t.Errorf("answer %d: %v", id, err)
		}
	}
	if _, ok := as.text(id2); ok {
		t.Error("an answered request is still listed")
	}
	// A request given up (timeout, stop) is withdrawn; its number is not
	// reused.
	as.drop(id1)
	if len(as.ids()) != 0 {
		t.Errorf("left %v", as.ids())
	}
	select {
	case v := <-a1:
		t.Errorf("a dropped request was answered %v", v)
	default:
	}
	if id3, _ := as.add("again?"); id3 <= id2 {
		t.Errorf("number %d after %d", id3, id2)
	}
}

func TestParseAnswer(t *testing.T) {
	for in, want := range map[string]bool{"allow": true, "yes\n": true, " y ": true, "deny": false, "no\n": false, "n": false} {
		if got, err := parseAnswer(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "ALLOW", "allowed", "yes please", "1"} {
		if _, err := parseAnswer(bad); !errs.Is(err, errs.Invalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// Racing answers to one request: one is taken, the others find none, and
// the asker gets the one taken (the answer never blocks the writer).
func TestAsksRacingAnswers(t *testing.T) {
	var as asks
	for round := 0; round < 100; round++ {
		id, ch := as.add("ok?")
		var taken atomic.Int32
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if as.answer(id, w%2 == 0) == nil {
					taken.Add(1)
				}
			}()
		}
		wg.Wait()
		if taken.Load() != 1 {
			t.Fatalf("%d answers taken", taken.Load())
		}
		<-ch
	}
}
