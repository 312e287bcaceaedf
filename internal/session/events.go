package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"ollie.dev/ollie/internal/errs"
)

// Event is one line of events.jsonl.
type Event struct {
	Seq  int64          `json:"seq"`
	Time time.Time      `json:"time"`
	Type string         `json:"type"`
	Data map[string]any `json:"data,omitempty"`
}

func (s *Session) eventLocked(typ string, data map[string]any) {
	if s.nextSeq < 0 {
		s.nextSeq = countLines(s.EventsPath())
	}
	ev := Event{Seq: s.nextSeq, Time: time.Now().UTC(), Type: typ, Data: data}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	if err := s.appendLocked("events.jsonl", append(b, '\n'), false); err != nil {
		s.m.logf("session %s: event: %v", s.id, err)
		return
	}
	s.nextSeq++
	s.notify.broadcast()
}

func countLines(name string) int64 {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	return int64(bytes.Count(b, []byte{'\n'}))
}

// Asks returns the pending consent requests, by number.
func (s *Session) Asks() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int, 0, len(s.asks))
	for id := range s.asks {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// AskText describes pending request id.
func (s *Session) AskText(id int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.asks[id]
	if !ok {
		return "", false
	}
	return a.text, true
}

// Answer answers pending request id with "allow" or "deny".
func (s *Session) Answer(id int, answer string) error {
	var allow bool
	switch strings.TrimSpace(answer) {
	case "allow", "yes", "y":
		allow = true
	case "deny", "no", "n":
	default:
		return errs.E(errs.Invalid, fmt.Sprintf("answer %q: write allow or deny", strings.TrimSpace(answer)))
	}
	s.mu.Lock()
	a, ok := s.asks[id]
	if ok {
		delete(s.asks, id)
	}
	s.mu.Unlock()
	if !ok {
		return errs.E(errs.NotExist, "no such request")
	}
	a.answer <- allow
	return nil
}

type ask struct {
	text   string
	answer chan bool
}

// Removed reports whether the session has ended.
func (s *Session) Removed() bool {
	return s.removed.Load()
}
