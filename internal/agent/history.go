package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/session"
)

// histCache keeps the decoded history of recently active sessions, so a
// turn decodes only what was appended since the last one (its prompt),
// not the whole conversation again.
type histCache struct {
	ino  uint64
	size int64
	msgs []backend.Message
}

// maxHistCache caps the sessions whose history stays decoded in memory.
const maxHistCache = 64

// history returns the session's history, from the cache when the history
// file is the one it decoded, grown by appends only.
func (r *Runner) history(t *session.Turn) ([]backend.Message, error) {
	id := t.S.ID()
	f, err := os.Open(t.S.ContextPath())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ino := inode(fi)
	r.mu.Lock()
	c := r.hist[id]
	r.mu.Unlock()
	var base []backend.Message
	var from int64
	if c != nil && c.ino == ino && c.size <= fi.Size() {
		base, from = c.msgs, c.size
	}
	more, err := decodeFrom(f, from, fi.Size()-from, len(base))
	if err != nil {
		return nil, err
	}
	msgs := append(base[:len(base):len(base)], more...)
	return msgs, nil
}

// remember caches the history as it stands at the end of a turn.
func (r *Runner) remember(t *session.Turn, msgs []backend.Message) {
	fi, err := os.Stat(t.S.ContextPath())
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.hist) >= maxHistCache {
		for k := range r.hist { // evict any one: a miss costs one decode
			delete(r.hist, k)
			break
		}
	}
	r.hist[t.S.ID()] = &histCache{ino: inode(fi), size: fi.Size(), msgs: msgs}
}

// forget drops a session's cached history (it was rewritten).
func (r *Runner) forget(id string) {
	r.mu.Lock()
	delete(r.hist, id)
	r.mu.Unlock()
}

// decodeFrom decodes the messages of f from offset off, where size bytes
// were when f was looked at (a buffer's worth; more is read if there is
// more); n0 messages come before them, for errors.
func decodeFrom(f *os.File, off, size int64, n0 int) ([]backend.Message, error) {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	var out []backend.Message
	sc := bufio.NewScanner(f)
	// Usually what a turn adds is one prompt: a buffer of that size,
	// not of the longest line there may be (the Scanner grows it).
	sc.Buffer(make([]byte, min(max(size+1, 512), 64<<10)), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m backend.Message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("history message %d: %v", n0+len(out)+1, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// cutCallNote is the result given to a tool call that never got one: the
// daemon died, or was restarted, while the call ran.
const cutCallNote = "not run or not finished: the turn was interrupted by a restart of the daemon"

// answerCutCalls gives every tool call without a result one saying it
// was cut, as every API refuses a call with no result. Results missing at
// the end of the history are appended to it, so the repair is made once;
// a gap earlier on (a history written by an older ollie) is filled in
// the messages sent only.
func answerCutCalls(t *session.Turn, msgs []backend.Message) ([]backend.Message, error) {
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role != backend.RoleAssistant || len(m.Calls) == 0 {
			continue
		}
		j := i + 1
		answered := map[string]bool{}
		for ; j < len(msgs) && msgs[j].Role == backend.RoleTool; j++ {
			answered[msgs[j].CallID] = true
		}
		var add []backend.Message
		for _, c := range m.Calls {
			if !answered[c.ID] {
				add = append(add, backend.Message{Role: backend.RoleTool, CallID: c.ID, Text: cutCallNote, Error: true})
			}
		}
		if len(add) == 0 {
			continue
		}
		if j == len(msgs) {
			for _, res := range add {
				if err := t.Append(res); err != nil {
					return msgs, err
				}
			}
			t.Chat(fmt.Sprintf(":: %d tool call(s) cut by the restart answered as not finished\n", len(add)))
			t.Event("cut_calls", map[string]any{"calls": len(add)})
			return append(msgs, add...), nil
		}
		msgs = append(msgs[:j:j], append(add, msgs[j:]...)...)
		i = j + len(add) - 1
	}
	return msgs, nil
}
