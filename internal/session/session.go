package session

import (
	"bytes"
	"container/list"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/valid"
)

// Session is one agent session. Its exported methods are safe for
// concurrent use.
type Session struct {
	m   *Manager
	dir string
	id  string

	chatVers atomic.Uint32 // bumped on every append to chat
	chatSize atomic.Int64

	mu        sync.Mutex
	meta      Meta
	state     State
	lastErr   string // error of the last failed turn
	paused    string // why queued work waits for `ctl resume` ("" = it does not)
	queue     []string
	usage     Usage
	reply     string // the last reply, once a turn has set it
	replySet  bool
	system    string // the system prompt as last written, once known
	systemSet bool
	offset    int64 // chat size just after the last user prompt; -1 until found after a load
	prev      string
	chatHold  string      // streamed chat that may start a key (see Turn.Chat)
	turn      *turn       // the running turn, nil when none
	removed   atomic.Bool // read without mu: stats of a session's files must not wait for its lock
	unsynced  bool        // the directory is not yet durable (see New)
	notify    notifier    // state, queue and event changes
	nextSeq   int64       // next event sequence number; -1 until counted
	asks      map[int]*ask
	askSeq    int
	open      map[string]*appendFile // logs kept open (see openLogsLocked)
	usageF    *os.File               // usage.json, kept open with the logs
	lruElem   *list.Element          // in the manager's list of sessions with open logs
	stateVer  atomic.Uint32
	summary   atomic.Pointer[Summary] // see Summary; published under mu
}

// ID returns the session's id (its directory name on disk).
func (s *Session) ID() string { return s.id }

// Dir returns the session's directory on disk.
func (s *Session) Dir() string { return s.dir }

// TreePath is the session's directory in the tree, relative to its root:
// s/<id>, or b/<job>/<k> for a member of a job.
func (s *Session) TreePath() string {
	if d := s.m.o.TreeDir; d != "" {
		return d + "/" + s.Name()
	}
	return "s/" + s.id
}

// TmpDir is the session's scratch directory for execute_code.
func (s *Session) TmpDir() string { return filepath.Join(s.dir, "tmp") }

// EnsureTmp makes the scratch directory if it does not exist yet, with
// its quota (see quotaTmp), and returns it.
func (s *Session) EnsureTmp() (string, error) {
	d := s.TmpDir()
	if err := os.Mkdir(d, 0700); err != nil && !os.IsExist(err) {
		return "", err
	}
	if err := quotaTmp(d, s.m.o.TmpQuotaMB); err != nil {
		return "", err
	}
	return d, nil
}

// Meta returns a copy of the session's settings.
func (s *Session) Meta() Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta
}

// Name returns the session's name, or "" if it has none.
func (s *Session) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta.Name
}

// State returns the current state and, in state Error, the error.
func (s *Session) State() (State, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.lastErr
}

// StateVersion changes whenever the state does.
func (s *Session) StateVersion() uint32 { return s.stateVer.Load() }

// ChatPath is the chat log on disk, which clients read directly.
func (s *Session) ChatPath() string { return filepath.Join(s.dir, "chat") }

// ChatSize and ChatVersion describe the chat log for stat.
func (s *Session) ChatSize() int64      { return s.chatSize.Load() }
func (s *Session) ChatVersion() uint32  { return s.chatVers.Load() }
func (s *Session) EventsPath() string   { return filepath.Join(s.dir, "events.jsonl") }
func (s *Session) ContextPath() string  { return filepath.Join(s.dir, "context.jsonl") }
func (s *Session) SystemPrompt() []byte { return readOrEmpty(filepath.Join(s.dir, "systemprompt")) }
func (s *Session) Plan() []byte         { return readOrEmpty(filepath.Join(s.dir, "plan")) }
func readOrEmpty(name string) []byte    { b, _ := os.ReadFile(name); return b }
func (s *Session) Usage() Usage         { s.mu.Lock(); defer s.mu.Unlock(); return s.usage }
func (s *Session) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsetLocked()
}

func (s *Session) offsetLocked() int64 {
	if s.offset < 0 {
		s.offset = promptEnd(s.ChatPath(), s.prevPromptLocked(), s.chatSize.Load())
	}
	return s.offset
}
func (s *Session) Queue() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queue...)
}
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notify.wait()
}

// PlanPath is the plan on disk, which SetPlan replaces whole: a stat of
// it is the plan's length and version, with no lock.
func (s *Session) PlanPath() string { return filepath.Join(s.dir, "plan") }

// SetPlan replaces the plan, durably.
func (s *Session) SetPlan(b []byte) error {
	if len(b) > maxPlan {
		return errs.E(errs.TooLarge, "plan over 256 KiB")
	}
	// The plan is shown to the model: text. TextPrefix, since the tree
	// still saves it write by write and a write may end inside a rune.
	if err := valid.TextPrefix("plan", b); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(s.dir, "plan"), b, 0600)
}

const maxPlan = 256 << 10

// Submit asks the session to run prompt: at once if it is idle, else
// after the prompts already queued. When Submit returns, the prompt is on
// disk and, if it started a turn, the state is no longer idle.
func (s *Session) Submit(prompt string) error {
	if err := checkPrompt(prompt); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed.Load() {
		return errs.E(errs.NotExist, "session ended")
	}
	if s.turn != nil || len(s.queue) > 0 && s.paused == "" {
		return s.enqueueLocked(prompt)
	}
	s.paused = ""
	return s.startLocked(prompt, false)
}

// Enqueue queues prompt for after the current turn (fifo.in). On an idle
// session it starts at once, like Submit.
func (s *Session) Enqueue(prompt string) error { return s.Submit(prompt) }

// Pop removes and returns the next queued prompt (fifo.out).
func (s *Session) Pop() (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return "", false, nil
	}
	p := s.queue[0]
	if err := s.saveQueueLocked(s.queue[1:]); err != nil {
		return "", false, err
	}
	return p, true, nil
}

func checkPrompt(p string) error {
	switch {
	case strings.TrimSpace(p) == "":
		return errs.E(errs.Invalid, "empty prompt")
	case len(p) > maxPrompt:
		return errs.E(errs.TooLarge, "prompt over 4 MiB")
	}
	return valid.String("prompt", p)
}

const maxPrompt = 4 << 20

func (s *Session) enqueueLocked(prompt string) error {
	q := append(append([]string(nil), s.queue...), prompt)
	if err := s.saveQueueLocked(q); err != nil {
		return err
	}
	s.eventLocked("queued", map[string]any{"queue": len(q)})
	return nil
}

func (s *Session) saveQueueLocked(q []string) error {
	var b bytes.Buffer
	for _, p := range q {
		line, _ := json.Marshal(p)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := writeAtomic(filepath.Join(s.dir, "queue.jsonl"), b.Bytes(), 0600); err != nil {
		return errs.E(errs.Other, "save queue", err)
	}
	s.queue = q
	s.notify.broadcast()
	return nil
}

// setStateLocked changes the state, records the event and wakes waiters.
func (s *Session) setStateLocked(st State) {
	if s.state == st {
		return
	}
	s.state = st
	s.stateVer.Add(1)
	s.publishLocked()
	s.eventLocked("state", map[string]any{"state": string(st)})
}

// Wait blocks until the session is idle with nothing queued that will run
// by itself, or done is closed. It returns the state and the error of
// the last turn if it failed.
func (s *Session) Wait(done <-chan struct{}) (State, string, error) {
	for {
		s.mu.Lock()
		st, e, ch := s.state, s.lastErr, s.notify.wait()
		settled := s.turn == nil && (len(s.queue) == 0 || s.paused != "") || s.removed.Load()
		paused := s.paused
		s.mu.Unlock()
		if settled {
			if paused != "" && e == "" {
				e = paused
			}
			return st, e, nil
		}
		select {
		case <-ch:
		case <-done:
			return st, "", errs.E(errs.Interrupted)
		}
	}
}

// WaitChange blocks until the state differs from from, or done is closed.
func (s *Session) WaitChange(from State, done <-chan struct{}) (State, error) {
	for {
		s.mu.Lock()
		st, ch := s.state, s.notify.wait()
		s.mu.Unlock()
		if st != from {
			return st, nil
		}
		select {
		case <-ch:
		case <-done:
			return st, errs.E(errs.Interrupted)
		}
	}
}

// Paused says why queued work waits for `ctl resume`, or "".
func (s *Session) Paused() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// appendLocked appends to one of the session's logs, through its open
// file when the session keeps its logs open, else by opening it for the
// one write. It is the one way text enters a log, so it is where secrets
// are redacted.
func (s *Session) appendLocked(name string, b []byte, durable bool) error {
	return s.writeLocked(name, s.m.clean(name, b), durable)
}

// writeLocked appends b, already redacted, to a log.
func (s *Session) writeLocked(name string, b []byte, durable bool) error {
	if a := s.open[name]; a != nil {
		return a.write(b, durable)
	}
	a, err := openAppend(filepath.Join(s.dir, name))
	if err != nil {
		return err
	}
	if s.open != nil {
		s.open[name] = a
		return a.write(b, durable)
	}
	defer a.close()
	return a.write(b, durable)
}

// chatLocked appends text to the chat log, after what streamed chat was
// held back.
func (s *Session) chatLocked(text string, durable bool) error {
	if s.chatHold != "" {
		text = s.m.o.Redact.Unheld(s.chatHold) + text
		s.chatHold = ""
	}
	if text == "" {
		return nil
	}
	text = s.m.o.Redact.String(text)
	err := s.writeLocked("chat", []byte(text), durable)
	if err == nil {
		s.chatSize.Add(int64(len(text)))
		s.chatVers.Add(1)
		s.notify.broadcast()
	}
	return err
}
