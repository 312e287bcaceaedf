package session

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/valid"
)

// Session is one agent session. Its exported methods are safe for
// concurrent use.
//
// It composes the parts that each do one job, and adds what ties them:
// which prompt runs when, and what each change records. The parts:
//
//	logs      the append-only files and the usage record (store.go)
//	sm        the state and its transitions (state.go)
//	queue     the prompts waiting, on disk (queue.go)
//	asks      the pending consent requests (asks.go)
//	env       the tools' environment (env.go)
//
// and, in the manager, the set of sessions whose logs stay open (lru.go).
type Session struct {
	m   *Manager
	dir string
	id  string

	chatVers atomic.Uint32 // bumped on every append to chat
	chatSize atomic.Int64

	sm      *machine                // own leaf lock
	queue   *promptQueue            // own leaf lock
	asks    asks                    // own leaf lock
	env     envFile                 // own leaf lock
	removed atomic.Bool             // read without mu: stats of a session's files must not wait for its lock
	tmpMu   sync.Mutex              // own leaf lock: the mounting of tmp (see quotaTmp)
	tmpGone bool                    // under tmpMu: ReleaseTmp was called, and tmp is not made again
	summary atomic.Pointer[Summary] // see Summary; published under mu

	mu           sync.Mutex
	meta         Meta
	logs         logs
	paused       string // why queued work waits for `ctl resume` ("" = it does not)
	usage        Usage
	reply        string // the last reply, once a turn has set it
	replySet     bool
	system       string // the system prompt as last rendered or sent, once known
	systemSet    bool
	systemOnDisk bool      // the file systemprompt holds system
	systemVers   uint32    // changes with system
	metaVers     uint64    // changes with meta: a system prompt rendered for older settings is stale
	systemTime   time.Time // when system last changed
	offset       int64     // chat size just after the last user prompt; -1 until found after a load
	prev         string
	chatHold     string      // streamed chat that may start a key (see Turn.Chat)
	turn         *turn       // the running turn, nil when none
	unsynced     bool        // the directory is not yet durable (see New)
	notify       notifier    // state, queue and event changes
	nextSeq      int64       // next event sequence number; -1 until counted
	turned       atomic.Bool // a turn asked FirstTurn
}

// newSession makes the value of a session whose directory is dir; the
// caller fills in the rest before sharing it.
func newSession(m *Manager, dir, id string) *Session {
	s := &Session{m: m, dir: dir, id: id, sm: newMachine(), notify: newNotifier(), logs: logs{dir: dir}}
	s.queue = &promptQueue{path: filepath.Join(dir, "queue.jsonl")}
	s.env.path = filepath.Join(dir, "env.json")
	return s
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
// its quota (see quotaTmp), and returns it; after ReleaseTmp it fails.
func (s *Session) EnsureTmp() (string, error) {
	d := s.TmpDir()
	s.tmpMu.Lock()
	defer s.tmpMu.Unlock()
	if s.tmpGone {
		// Removed, or the daemon is stopping: a mount now would outlive
		// it (a warming of the sandbox runs beside its turn).
		return "", errs.E(errs.NotExist, "session ended")
	}
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
func (s *Session) State() (State, string) { return s.sm.get() }

// StateVersion changes whenever the state does.
func (s *Session) StateVersion() uint32 { return s.sm.version() }

// ChatPath is the chat log on disk, which clients read directly.
func (s *Session) ChatPath() string { return filepath.Join(s.dir, "chat") }

// ChatSize and ChatVersion describe the chat log for stat.
func (s *Session) ChatSize() int64     { return s.chatSize.Load() }
func (s *Session) ChatVersion() uint32 { return s.chatVers.Load() }
func (s *Session) EventsPath() string  { return filepath.Join(s.dir, "events.jsonl") }
func (s *Session) ContextPath() string { return filepath.Join(s.dir, "context.jsonl") }
func (s *Session) Plan() []byte        { return readOrEmpty(filepath.Join(s.dir, "plan")) }
func readOrEmpty(name string) []byte   { b, _ := os.ReadFile(name); return b }
func (s *Session) Usage() Usage        { s.mu.Lock(); defer s.mu.Unlock(); return s.usage }
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
func (s *Session) Queue() []string { return s.queue.list() }
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
	if s.turn != nil || s.queue.len() > 0 && s.paused == "" {
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
	return s.popLocked()
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
	n, err := s.queue.push(prompt)
	if err != nil {
		return err
	}
	s.notify.broadcast()
	s.eventLocked("queued", map[string]any{"queue": n})
	return nil
}

// popLocked removes and returns the next queued prompt.
func (s *Session) popLocked() (string, bool, error) {
	p, ok, err := s.queue.pop()
	if ok {
		s.notify.broadcast()
	}
	return p, ok, err
}

// changedStateLocked records a change of state the machine made (err is
// its answer): the summary, the event, the waiters.
func (s *Session) changedStateLocked(err error) error {
	if err != nil {
		return err
	}
	st, _ := s.sm.get()
	s.publishLocked()
	s.eventLocked("state", map[string]any{"state": string(st)})
	return nil
}

// Wait blocks until the session is idle with nothing queued that will run
// by itself, or done is closed. It returns the state and the error of
// the last turn if it failed.
func (s *Session) Wait(done <-chan struct{}) (State, string, error) {
	for {
		s.mu.Lock()
		ch := s.notify.wait()
		st, e := s.sm.get()
		settled := s.turn == nil && (s.queue.len() == 0 || s.paused != "") || s.removed.Load()
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
	return s.sm.waitChange(from, done)
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
	return s.logs.write(name, b, durable)
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
