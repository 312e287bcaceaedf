package session

import "path/filepath"

// ReplyText returns the last complete assistant reply.
func (s *Session) ReplyText() []byte { return readOrEmpty(filepath.Join(s.dir, "reply")) }

// PrevPromptText returns the last submitted prompt.
func (s *Session) PrevPromptText() []byte { return readOrEmpty(filepath.Join(s.dir, "prompt.prev")) }
