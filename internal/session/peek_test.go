package session

import (
	"strings"
	"testing"
)

// TestPeekWithoutWaiting: the values a stat needs come back at once while
// the lock is held (as a Submit holds it across an fsync), saying they
// could not look, and the same as the locking getters once it is free.
// Cfg needs no lock at all.
func TestPeekWithoutWaiting(t *testing.T) {
	_, s := newTestSession(t)
	s.mu.Lock()
	_, ok1 := s.PeekUsage()
	_, ok2 := s.PeekReplyLen()
	_, ok3 := s.PeekPrevPrompt()
	_, ok4 := s.PeekOffset()
	cfg := s.Cfg()
	s.mu.Unlock()
	if ok1 || ok2 || ok3 || ok4 {
		t.Errorf("a peek with the lock held says it looked: %v %v %v %v", ok1, ok2, ok3, ok4)
	}
	if len(cfg) != len(CfgKeys) || cfg[5] != [2]string{"model", "m0"} || cfg[2] != [2]string{"state", "idle"} {
		t.Errorf("Cfg with the lock held = %v", cfg)
	}
	if u, ok := s.PeekUsage(); !ok || u != s.Usage() {
		t.Errorf("PeekUsage = %+v %v, Usage = %+v", u, ok, s.Usage())
	}
	if n, ok := s.PeekReplyLen(); !ok || n != len(s.ReplyText()) {
		t.Errorf("PeekReplyLen = %d %v", n, ok)
	}
	if p, ok := s.PeekPrevPrompt(); !ok || string(p) != string(s.PrevPromptText()) {
		t.Errorf("PeekPrevPrompt = %q %v", p, ok)
	}
	if n, ok := s.PeekOffset(); !ok || n != s.Offset() {
		t.Errorf("PeekOffset = %d %v", n, ok)
	}
	if !strings.HasSuffix(s.SystemPromptPath(), "/systemprompt") {
		t.Errorf("path %s", s.SystemPromptPath())
	}
	if n, _ := s.QueueStat(); n != int64(len(s.QueueView())) {
		t.Errorf("QueueStat with the lock held = %d, the view %q", n, s.QueueView())
	}
}
