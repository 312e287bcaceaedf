package session

import (
	"bytes"
	"encoding/json"
	"os"
	"time"
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
func (s *Session) Asks() []int { return s.asks.ids() }

// AskText describes pending request id.
func (s *Session) AskText(id int) (string, bool) { return s.asks.text(id) }

// Answer answers pending request id with "allow" or "deny".
func (s *Session) Answer(id int, answer string) error {
	allow, err := parseAnswer(answer)
	if err != nil {
		return err
	}
	return s.asks.answer(id, allow)
}

// Removed reports whether the session has ended.
func (s *Session) Removed() bool {
	return s.removed.Load()
}
