package session

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
)

// promptQueue is the prompts waiting for the current turn, in order, kept
// in queue.jsonl: one JSON string a line. Every change replaces the file
// atomically and durably before it takes effect, so a crash leaves the
// queue as it was before the change or after it, never a mix, and a
// prompt acknowledged as queued is on disk.
//
// mu is a leaf lock; the session decides what to queue with its own lock
// held, and readers (Queue) take only this one.
type promptQueue struct {
	path string

	mu    sync.Mutex
	items []string
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
	for _, line := range strings.Split(string(b), "\n") {
		var p string
		if line != "" && json.Unmarshal([]byte(line), &p) == nil {
			q.items = append(q.items, p)
		}
	}
	return q, nil
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
	if err := q.saveLocked(next); err != nil {
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
	if err := q.saveLocked(q.items[1:]); err != nil {
		return "", false, err
	}
	return p, true, nil
}

// clear empties the queue.
func (q *promptQueue) clear() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.saveLocked(nil)
}

func (q *promptQueue) saveLocked(items []string) error {
	var b bytes.Buffer
	for _, p := range items {
		line, _ := json.Marshal(p)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := writeAtomic(q.path, b.Bytes(), 0600); err != nil {
		return errs.E(errs.Other, "save queue", err)
	}
	q.items = items
	return nil
}
