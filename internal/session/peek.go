package session

import "path/filepath"

// The tree stats a session's files in the 9P reader, which must wait for
// no lock another request may hold: a Submit holds the session's lock
// across the fsync of a prompt. So the values a stat needs for a true
// length (NAMESPACE rule 9) come from the Peek methods, which take the
// lock only if it is free at once and report false if it was not (the
// caller then shows what it knew last).

// PeekUsage returns the usage, as Usage does.
func (s *Session) PeekUsage() (Usage, bool) {
	if !s.mu.TryLock() {
		return Usage{}, false
	}
	defer s.mu.Unlock()
	return s.usage, true
}

// PeekReplyLen returns the length of the last reply, as ReplyText has
// it: what a stat of reply needs, without a copy of a reply that may be
// megabytes long.
func (s *Session) PeekReplyLen() (int, bool) {
	if !s.mu.TryLock() {
		return 0, false
	}
	r, ok := s.reply, s.replySet
	s.mu.Unlock()
	if ok {
		return len(r), true
	}
	return len(s.replyFromContext()), true
}

// PeekPrevPrompt returns the last prompt, as PrevPromptText does.
func (s *Session) PeekPrevPrompt() ([]byte, bool) {
	if !s.mu.TryLock() {
		return nil, false
	}
	defer s.mu.Unlock()
	return s.prevPromptLocked(), true
}

// PeekOffset returns the offset, as Offset does.
func (s *Session) PeekOffset() (int64, bool) {
	if !s.mu.TryLock() {
		return 0, false
	}
	defer s.mu.Unlock()
	return s.offsetLocked(), true
}

// QueueView is what the session's queue file shows: the queued prompts,
// one JSON string a line.
func (s *Session) QueueView() []byte { return view(s.queue.list()) }

// QueueStat returns the length of QueueView and a version that changes
// with it, without the session's lock.
func (s *Session) QueueStat() (size int64, vers uint32) { return s.queue.stat() }

// SystemPromptPath is the system prompt a turn last sent, on disk.
func (s *Session) SystemPromptPath() string { return filepath.Join(s.dir, "systemprompt") }
