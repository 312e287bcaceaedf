package session

import (
	"os"
	"path/filepath"
	"strings"
)

func (m *Manager) load(id string) (*Session, error) {
	dir := filepath.Join(m.o.Dir, id)
	s := newSession(m, dir, id)
	s.nextSeq = -1
	if err := readJSON(filepath.Join(dir, "meta.json"), &s.meta); err != nil {
		return nil, err
	}
	s.meta.ID = id
	loadUsage(filepath.Join(dir, "usage.json"), &s.usage)
	q, err := loadQueue(filepath.Join(dir, "queue.jsonl"))
	if err != nil {
		m.logf("session %s: queue: %v", id, err)
	}
	s.queue = q
	if fi, err := os.Stat(s.ChatPath()); err == nil {
		s.chatSize.Store(fi.Size())
	}
	s.offset = -1 // found at the first read of offset, not at every start-up
	last := lastTurnEvent(s.EventsPath())
	if n, ok := last.Data["queued"].(float64); ok && last.Type == "turn_start" {
		// The daemon died after a turn began with a queued prompt and
		// before the prompt left the queue: it is begun, not queued.
		if err := s.queue.drop(int64(n)); err != nil {
			m.logf("session %s: queue: %v", id, err)
		}
	}
	switch {
	case last.Type == "turn_start":
		// A turn was running when the daemon died.
		s.chatLocked(":: "+interrupted+"; `echo resume > ctl` continues the turn\n", true)
		s.paused = interrupted + "; ctl resume continues"
		s.prev = string(s.PrevPromptText()) // the cut turn's prompt, for resume
		s.eventLocked("interrupted", nil)
	case last.Type == "interrupted":
		// Still cut from an earlier restart: said in chat once, then.
		s.paused = interrupted + "; ctl resume continues"
		s.prev = string(s.PrevPromptText())
	case s.queue.len() > 0:
		s.paused = "queued prompts wait for ctl resume after a restart"
	}
	if e, ok := last.Data["error"].(string); ok && last.Type == "turn_end" {
		s.sm.restore(Error, m.o.Redact.String(e))
	}
	s.publishLocked() // s is not shared yet
	return s, nil
}

// promptEnd finds where the last prompt's chat lines end, which is what
// offset says, in the last 1 MiB of a chat of the given size; failing
// that, the end of the chat.
func promptEnd(chat string, prev []byte, size int64) int64 {
	if len(prev) == 0 {
		return size
	}
	f, err := os.Open(chat)
	if err != nil {
		return size
	}
	defer f.Close()
	from := max(0, size-1<<20)
	buf := make([]byte, size-from)
	n, _ := f.ReadAt(buf, from)
	line := "user: " + strings.TrimRight(string(prev), "\n") + "\n"
	if i := strings.LastIndex(string(buf[:n]), line); i >= 0 {
		return from + int64(i+len(line))
	}
	return size
}

// lastTurnEvent returns the last turn_start, turn_end or interrupted event of an events
// log, reading it backwards from the end.
func lastTurnEvent(name string) Event {
	var found Event
	scanBack(name, func(line string) bool {
		if !strings.Contains(line, `"type":"turn_`) && !strings.Contains(line, `"type":"interrupted"`) {
			return true
		}
		var ev Event
		decodeJSON(line, &ev)
		if ev.Type == "turn_start" || ev.Type == "turn_end" || ev.Type == "interrupted" {
			found = ev
			return false
		}
		return true
	})
	return found
}
