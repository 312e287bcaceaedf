package session

import (
	"encoding/json"
	"io"
	"os"
	"strings"
)

// The last reply and the last prompt are not files of their own: writing
// a small file per turn by rename costs a journal flush on ext4. They are
// kept in memory once a turn sets them, and otherwise found at the end of
// the history, which holds them anyway.

// ReplyText returns the last complete assistant reply.
func (s *Session) ReplyText() []byte {
	s.mu.Lock()
	r, ok := s.reply, s.replySet
	s.mu.Unlock()
	if ok {
		return []byte(r)
	}
	return s.replyFromContext()
}

// replyFromContext finds the last reply in the history, after a load.
func (s *Session) replyFromContext() []byte {
	m, _ := lastMessage(s.ContextPath(), "assistant")
	if m.Text == "" {
		return nil
	}
	return []byte(strings.TrimSpace(m.Text) + "\n")
}

// PrevPromptText returns the last submitted prompt.
func (s *Session) PrevPromptText() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prevPromptLocked()
}

func (s *Session) prevPromptLocked() []byte {
	if s.prev != "" {
		return []byte(s.prev)
	}
	m, _ := lastMessage(s.ContextPath(), "user")
	return []byte(m.Text)
}

type roleText struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// lastMessage finds the last history message of role, reading backwards.
func lastMessage(path, role string) (roleText, bool) {
	var found roleText
	ok := false
	scanBack(path, func(line string) bool {
		if !strings.Contains(line, `"role":"`+role+`"`) {
			return true
		}
		if json.Unmarshal([]byte(line), &found) == nil && found.Role == role {
			ok = true
			return false
		}
		return true
	})
	return found, ok
}

// scanBack calls f on the lines of a file from the last to the first
// until f returns false.
func scanBack(path string, f func(line string) bool) {
	file, err := os.Open(path)
	if err != nil {
		return
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return
	}
	const chunk = 64 << 10
	var tail []byte
	for end := fi.Size(); end > 0; {
		off := max(end-chunk, 0)
		b := make([]byte, end-off)
		if _, err := file.ReadAt(b, off); err != nil && err != io.EOF {
			return
		}
		tail = append(b, tail...)
		end = off
		lines := strings.Split(string(tail), "\n")
		keep := ""
		if off > 0 {
			keep, lines = lines[0], lines[1:] // may be cut: read whole with the next chunk
		}
		for i := len(lines) - 1; i >= 0; i-- {
			if lines[i] != "" && !f(lines[i]) {
				return
			}
		}
		tail = []byte(keep)
	}
}
