package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"time"

	"ollie.dev/ollie/internal/errs"
)

// Chat appends streamed text to the chat log. It is not fsync'd: a crash
// of the daemon loses nothing written, and the turn's end syncs it. A
// tail that may begin a configured key waits for the next piece (or the
// turn's end), so that a key split across pieces is redacted whole.
func (t *Turn) Chat(text string) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	text, s.chatHold = s.chatHold+text, ""
	n := s.m.o.Redact.Held(text)
	err := s.chatLocked(text[:len(text)-n], false)
	s.chatHold = text[len(text)-n:]
	return err
}

// Append adds one message (any JSON value) to the history.
func (t *Turn) Append(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked("context.jsonl", append(b, '\n'), false)
}

// Sync makes everything appended so far durable.
func (t *Turn) Sync() error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.sync()
}

// History returns the messages of the history, oldest first.
func (t *Turn) History() ([]json.RawMessage, error) { return t.s.History() }

// History returns the messages of the history, oldest first. A last line
// without its newline is a record a crash tore before it was acknowledged
// (see cutTorn), and is left out; any other line that is not JSON is
// corruption, an error that names the line.
func (s *Session) History() ([]json.RawMessage, error) {
	f, err := os.Open(s.ContextPath())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []json.RawMessage
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			line = append([]byte(nil), line...)
			for err == bufio.ErrBufferFull && len(line) <= maxPrompt*4 {
				var more []byte
				more, err = r.ReadSlice('\n')
				line = append(line, more...)
			}
			if err == bufio.ErrBufferFull {
				return out, errs.E(errs.Other, s.ContextPath()+": line "+strconv.Itoa(n)+" is too long")
			}
		}
		if err == io.EOF {
			return out, nil // a torn last record, if any, is dropped
		}
		if err != nil {
			return out, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return out, errs.E(errs.Other, s.ContextPath()+": line "+strconv.Itoa(n)+" is not JSON: the history is corrupt")
		}
		out = append(out, append(json.RawMessage(nil), line...))
	}
}

// ReplaceHistory swaps the history for msgs (compaction). The old history
// is kept whole in history/, and note is shown in chat.
func (t *Turn) ReplaceHistory(msgs []json.RawMessage, note string) error {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.archiveHistoryLocked(); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, m := range msgs {
		b.Write(m)
		b.WriteByte('\n')
	}
	s.logs.reopen("context.jsonl")
	if err := writeAtomic(s.ContextPath(), s.m.clean("context.jsonl", b.Bytes()), 0600); err != nil {
		return err
	}
	s.eventLocked("compaction", map[string]any{"messages": len(msgs), "note": note})
	return s.chatLocked(":: compacted: "+note+"\n", true)
}

// SetState reports what the turn is doing (running, calling a tool,
// waiting after a rate limit ...): a busy state. Only the end of the turn
// makes the session idle or failed; a change the state machine refuses
// (see machine) is logged and changes nothing.
func (t *Turn) SetState(st State) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.changedStateLocked(s.sm.step(st)); err != nil {
		s.m.logf("session %s: state %s: %v", s.id, st, err)
	}
}

// Event records an event (tool call start and end, retries, hooks ...).
func (t *Turn) Event(typ string, data map[string]any) {
	s := t.s
	if typ == "tool_start" {
		s.m.toolCalls.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventLocked(typ, data)
}

// AddUsage adds one request's usage and cost to the totals.
func (t *Turn) AddUsage(u Usage) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage.Input += u.Input
	s.usage.Output += u.Output
	s.usage.CacheRead += u.CacheRead
	s.usage.CacheWrite += u.CacheWrite
	s.usage.Requests += u.Requests
	s.usage.Estimated = s.usage.Estimated || u.Estimated
	s.usage.Cost += u.Cost
	s.usage.TurnCost += u.Cost // StartTurnCost resets it at each turn
	s.usage.CostKnown = s.usage.CostKnown || u.CostKnown
	if u.Context > 0 {
		s.usage.Context = u.Context
	}
	if u.Window > 0 {
		s.usage.Window = u.Window
	}
	s.eventLocked("usage", map[string]any{"input": u.Input, "output": u.Output,
		"cache_read": u.CacheRead, "cache_write": u.CacheWrite, "estimated": u.Estimated, "cost_usd": u.Cost})
}

// StartTurnCost resets the cost of the last turn.
func (t *Turn) StartTurnCost() {
	s := t.s
	s.mu.Lock()
	s.usage.TurnCost = 0
	s.mu.Unlock()
}

// SetReply records the last complete assistant reply.
func (t *Turn) SetReply(text string) error {
	s := t.s
	text = s.m.o.Redact.String(text)
	s.mu.Lock()
	s.reply, s.replySet = text, true
	s.mu.Unlock()
	return nil
}

// SetSystemPrompt records the system prompt exactly as sent, in memory
// and on disk. The file is written only when it changes, in place: it is
// a record for people, and a rename per turn would cost an ext4 journal
// flush.
func (t *Turn) SetSystemPrompt(text string) error {
	s := t.s
	text = s.m.o.Redact.String(text)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.systemSet && s.system == text && s.systemOnDisk {
		return nil
	}
	p := s.SystemPromptPath()
	if !s.systemOnDisk {
		if old, err := os.ReadFile(p); err == nil && string(old) == text {
			s.setSystemLocked(text)
			s.systemOnDisk = true
			return nil
		}
	}
	if err := os.WriteFile(p, []byte(text), 0600); err != nil {
		return err
	}
	s.setSystemLocked(text)
	s.systemOnDisk = true
	return nil
}

// SettingsVersion returns the session's settings and a version of them
// that changes whenever they do, for SetSystemPrompt.
func (s *Session) SettingsVersion() (Meta, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta, s.metaVers
}

// SetSystemPrompt records the system prompt the next turn will send,
// rendered before it (at creation, after a change of settings) from the
// settings of version vers (SettingsVersion), so that systemprompt is true
// before the first turn. A text rendered from settings changed since is
// dropped: renders run at once (a change of settings, and a pass over
// every session after a change to a/, p/, t/ or sk/), and one that began
// before the change could end after the one made for it. The prompt is
// kept in memory only: the file on disk is what a turn sent
// (Turn.SetSystemPrompt), and writing it here cost a file's creation, a
// third of a session's.
func (s *Session) SetSystemPrompt(text string, vers uint64) error {
	text = s.m.o.Redact.String(text)
	s.mu.Lock()
	defer s.mu.Unlock()
	if vers != s.metaVers {
		return nil
	}
	if s.setSystemLocked(text) {
		s.systemOnDisk = false
	}
	return nil
}

// setSystemLocked makes text the system prompt and says whether that
// changed it.
func (s *Session) setSystemLocked(text string) (changed bool) {
	if s.systemSet && s.system == text {
		return false
	}
	s.system, s.systemSet = text, true
	s.systemVers++
	s.systemTime = time.Now()
	return true
}

// SystemPrompt is what the next turn will send, as last rendered, or
// what the last turn sent (from disk, after a restart).
func (s *Session) SystemPrompt() []byte {
	s.mu.Lock()
	text, ok := s.system, s.systemSet
	s.mu.Unlock()
	if ok {
		return []byte(text)
	}
	return readOrEmpty(s.SystemPromptPath())
}

// SystemPromptStat describes SystemPrompt for stat: its size, a version
// that changes with it and when it last changed; ok is false when it is
// not in memory, and the file on disk says.
func (s *Session) SystemPromptStat() (size int64, vers uint32, mtime time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.system)), s.systemVers, s.systemTime, s.systemSet
}

// Ask puts a consent request in ask/ and waits for `allow` or `deny`, for
// at most timeout; no answer in time is a denial.
func (t *Turn) Ask(ctx context.Context, text string, timeout time.Duration) (bool, error) {
	s := t.s
	text = s.m.o.Redact.String(text)
	s.mu.Lock()
	prev, _ := s.sm.get()
	id, answer := s.asks.add(text) // listed before the state says asking
	if err := s.changedStateLocked(s.sm.step(Asking)); err != nil {
		s.asks.drop(id)
		s.mu.Unlock()
		return false, err
	}
	s.eventLocked("ask", map[string]any{"id": id, "request": text})
	s.mu.Unlock()
	var allow bool
	var err error
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case allow = <-answer:
	case <-timer.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	s.asks.drop(id)
	s.eventLocked("answer", map[string]any{"id": id, "allow": allow})
	s.changedStateLocked(s.sm.step(prev))
	s.mu.Unlock()
	return allow, err
}

// Meta returns the session's settings.
func (t *Turn) Meta() Meta { return t.s.Meta() }
