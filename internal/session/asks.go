package session

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
)

// asks are a session's pending consent requests (ask/): a turn adds one
// and waits on its channel; the first answer takes the request, so a
// request is answered once, and a late or second answer finds none.
//
// mu is a leaf lock.
type asks struct {
	mu      sync.Mutex
	pending map[int]*ask
	seq     int // the number of the last request
}

type ask struct {
	text   string
	answer chan bool // buffered: an answer never waits for the asker
}

// add makes a request and returns its number and where its answer comes.
func (as *asks) add(text string) (int, <-chan bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.seq++
	if as.pending == nil {
		as.pending = map[int]*ask{}
	}
	a := &ask{text: text, answer: make(chan bool, 1)}
	as.pending[as.seq] = a
	return as.seq, a.answer
}

// drop withdraws request id (answered, timed out or given up).
func (as *asks) drop(id int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	delete(as.pending, id)
}

// answer answers request id and withdraws it.
func (as *asks) answer(id int, allow bool) error {
	as.mu.Lock()
	a, ok := as.pending[id]
	delete(as.pending, id)
	as.mu.Unlock()
	if !ok {
		return errs.E(errs.NotExist, "no such request")
	}
	a.answer <- allow
	return nil
}

// ids returns the numbers of the pending requests, in order.
func (as *asks) ids() []int {
	as.mu.Lock()
	defer as.mu.Unlock()
	ids := make([]int, 0, len(as.pending))
	for id := range as.pending {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// text describes pending request id.
func (as *asks) text(id int) (string, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	a, ok := as.pending[id]
	if !ok {
		return "", false
	}
	return a.text, true
}

// parseAnswer reads what is written to an ask file.
func parseAnswer(s string) (allow bool, err error) {
	switch strings.TrimSpace(s) {
	case "allow", "yes", "y":
		return true, nil
	case "deny", "no", "n":
		return false, nil
	}
	return false, errs.E(errs.Invalid, fmt.Sprintf("answer %q: write allow or deny", strings.TrimSpace(s)))
}
