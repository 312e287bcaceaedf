package session

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"ollie.dev/ollie/internal/errs"
)

// promptQueue is the prompts waiting for the current turn, in order, kept
// in queue.jsonl: one JSON string a line, after a first line with the
// number of prompts taken from the queue so far, once there are any.
// Every change replaces the file atomically and durably before it takes
// effect, so a crash leaves the queue as it was before the change or
// after it, never a mix, and a prompt acknowledged as queued is on disk.
//
// The count numbers the prompts: the first queued is taken+1. A turn
// started from the queue says so in its turn_start event, written before
// the prompt leaves the queue: a crash between the two leaves the prompt
// both begun and queued, which the next load sees (Session.load) and
// settles, rather than neither (it was lost).
//
// mu is a leaf lock; the session decides what to queue with its own lock
// held, and readers (Queue) take only this one.
type promptQueue struct {
	path string

	mu    sync.Mutex
	items []string
	taken int64 // prompts taken from the queue so far

	size atomic.Int64  // of the queue's view (view), for a stat without mu
	vers atomic.Uint32 // changes with the view
}

// loadQueue reads the queue at path. A line that is not a JSON string (a
// file cut by a crash of the machine before its rename was durable, or
// written by hand) is skipped: the lines around it still load.
func loadQueue(path string) (*promptQueue, error) {
	q := &promptQueue{path: path}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return q, nil
	}
	if err != nil {
		return q, err
	}
	lines := strings.Split(string(b), "\n")
	if n, err := strconv.ParseInt(lines[0], 10, 64); err == nil && n > 0 && n < 1<<53 {
		q.taken = n
		lines = lines[1:]
	}
	for _, line := range lines {
		var p string
		if line != "" && json.Unmarshal([]byte(line), &p) == nil {
			q.items = append(q.items, p)
		}
	}
	q.size.Store(int64(len(view(q.items))))
	return q, nil
}

// view is what the session's queue file shows: the prompts, one JSON
// string a line.
func view(items []string) []byte {
	var b bytes.Buffer
	for _, p := range items {
		line, _ := json.Marshal(p)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// head returns the first prompt and its number, without taking it.
func (q *promptQueue) head() (p string, n int64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return "", 0, false
	}
	return q.items[0], q.taken + 1, true
}

// drop takes the first prompt if it is number n.
func (q *promptQueue) drop(n int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 || q.taken+1 != n {
		return nil
	}
	return q.saveLocked(q.items[1:], q.taken+1)
}

func (q *promptQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// list returns a copy of the queued prompts, first first.
func (q *promptQueue) list() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.items...)
}

// push adds p at the end and returns the new length.
func (q *promptQueue) push(p string) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	next := append(append([]string(nil), q.items...), p)
	if err := q.saveLocked(next, q.taken); err != nil {
		return 0, err
	}
	return len(next), nil
}

// pop removes and returns the first prompt; ok is false if there is none.
func (q *promptQueue) pop() (p string, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return "", false, nil
	}
	p = q.items[0]
	if err := q.saveLocked(q.items[1:], q.taken+1); err != nil {
		return "", false, err
	}
	return p, true, nil
}

// clear empties the queue.
func (q *promptQueue) clear() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.saveLocked(nil, q.taken+int64(len(q.items)))
}

func (q *promptQueue) saveLocked(items []string, taken int64) error {
	v := view(items)
	b := v
	if taken > 0 {
		b = append(strconv.AppendInt(nil, taken, 10), '\n')
		b = append(b, v...)
	}
	if err := writeAtomic(q.path, b, 0600); err != nil {
		return errs.E(errs.Other, "save queue", err)
	}
	q.items, q.taken = items, taken
	q.size.Store(int64(len(v)))
	q.vers.Add(1)
	return nil
}

// stat returns the length of the queue's view and its version.
func (q *promptQueue) stat() (int64, uint32) { return q.size.Load(), q.vers.Load() }
