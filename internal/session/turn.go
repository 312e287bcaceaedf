package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"ollie.dev/ollie/internal/errs"
)

// Runner runs the agent loop. The agent package implements it; tests may
// supply their own. Its methods run on a goroutine of the session's and
// report through the Turn.
type Runner interface {
	// Run runs one turn. The prompt is already in chat and in the
	// history (unless t.Resume, which continues a turn cut short by a
	// restart). It returns nil when the model has finished, an error when
	// the turn failed, or ctx's error after `ctl stop`; in every case it
	// leaves a history that the next request accepts.
	Run(ctx context.Context, t *Turn) error
	// Compact summarizes the history now (`ctl compact`).
	Compact(ctx context.Context, t *Turn) error
}

// turn is the running turn of a session.
type turn struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

var errStopped = errors.New("stopped")

// Turn is the handle a Runner uses to read and write its session: its
// methods (turnapi.go) report what the turn does, and S is what the turn
// may read of its session, and the one thing it may ask of it (queue a
// prompt). The runner never holds the session itself.
type Turn struct {
	S      Handle
	Prompt string
	Resume bool // continuing a turn cut by a restart

	s      *Session
	queued int64 // the prompt's number in the queue, if it came from there
}

// Handle is what a turn sees of its session. Its methods are safe for
// concurrent use.
type Handle interface {
	ID() string
	// TreePath is the session's directory in the tree (s/<id>, or
	// b/<job>/<k>), relative to the tree's root.
	TreePath() string
	// ContextPath is the history on disk, one JSON message a line.
	ContextPath() string
	ReplyText() []byte
	Plan() []byte
	Env() []EnvVar
	Usage() Usage
	// EnsureTmp makes the session's scratch directory and returns it.
	EnsureTmp() (string, error)
	// Enqueue queues a prompt for after the turn.
	Enqueue(prompt string) error
	// FirstTurn is true for the first turn that asks, in the session's
	// life in this daemon, and false ever after: what a runner prepares
	// once per session (the sandbox of its tools) is done then.
	FirstTurn() bool
}

// handle is the Handle of a session: a value of its own, so that a runner
// cannot get from it to the Session (and its locks, its ctl, its removal).
type handle struct{ s *Session }

func (h handle) ID() string                  { return h.s.ID() }
func (h handle) TreePath() string            { return h.s.TreePath() }
func (h handle) ContextPath() string         { return h.s.ContextPath() }
func (h handle) ReplyText() []byte           { return h.s.ReplyText() }
func (h handle) Plan() []byte                { return h.s.Plan() }
func (h handle) Env() []EnvVar               { return h.s.Env() }
func (h handle) Usage() Usage                { return h.s.Usage() }
func (h handle) EnsureTmp() (string, error)  { return h.s.EnsureTmp() }
func (h handle) Enqueue(prompt string) error { return h.s.Enqueue(prompt) }
func (h handle) FirstTurn() bool             { return h.s.FirstTurn() }

// FirstTurn is true for the first caller in the session's life in this
// daemon (see Handle).
func (s *Session) FirstTurn() bool { return !s.turned.Swap(true) }

func (s *Session) newTurn(prompt string, resume bool) *Turn {
	return &Turn{S: handle{s}, Prompt: prompt, Resume: resume, s: s}
}

// startLocked starts a turn for prompt; it returns once the prompt is on
// disk and the state is running.
func (s *Session) startLocked(prompt string, resume bool) error {
	return s.launchLocked(s.newTurn(prompt, resume), false)
}

func (s *Session) launchLocked(t *Turn, compact bool) error {
	if s.turn != nil { // else the state is not busy, and begin below succeeds
		return errs.E(errs.Busy, "a turn is running")
	}
	if !t.Resume && !compact {
		line := "user: " + strings.TrimRight(t.Prompt, "\n") + "\n"
		if err := s.chatLocked(line, false); err != nil {
			return errs.E(errs.Other, "chat", err)
		}
		msg, _ := json.Marshal(map[string]string{"role": "user", "text": t.Prompt})
		if err := s.promptLocked(append(msg, '\n')); err != nil {
			return errs.E(errs.Other, "history", err)
		}
		s.offset = s.chatSize.Load()
		s.prev = t.Prompt
	}
	first := Running
	if compact {
		first = Compacting
	}
	if err := s.sm.begin(first); err != nil {
		return err
	}
	s.m.turns.Add(1)
	s.keepLogsLocked()
	ctx, cancel := context.WithCancelCause(context.Background())
	tr := &turn{cancel: cancel, done: make(chan struct{})}
	s.turn = tr
	start := map[string]any{"resume": t.Resume, "compact": compact}
	if t.queued > 0 {
		start["queued"] = t.queued // see promptQueue: before the prompt leaves the queue
	}
	s.eventLocked("turn_start", start)
	s.changedStateLocked(nil)
	go s.run(ctx, tr, t, compact)
	return nil
}

func (s *Session) run(ctx context.Context, tr *turn, t *Turn, compact bool) {
	start := time.Now()
	err := s.callRunner(ctx, t, compact)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatLocked("", false) // what streamed chat was held back
	stopped := errors.Is(context.Cause(ctx), errStopped)
	data := map[string]any{"ms": time.Since(start).Milliseconds()}
	failed := ""
	switch {
	case stopped:
		s.chatLocked(":: stopped\n", false)
		data["stopped"] = true
	case err != nil:
		failed = s.m.o.Redact.String(oneLine(err.Error()))
		s.chatLocked("error: "+failed+"\n", false)
		data["error"] = failed
	}
	if err := s.changedStateLocked(s.sm.finish(failed)); err != nil {
		s.m.logf("session %s: end of turn: %v", s.id, err) // cannot be: the turn began, and only this ends one
	}
	s.eventLocked("turn_end", data)
	s.saveUsageLocked()
	s.turn = nil
	close(tr.done)
	if s.queue.len() > 0 && s.paused == "" && !s.removed.Load() && !s.m.closing.Load() {
		if err := s.startQueuedLocked(); err != nil {
			s.m.logf("session %s: start queued prompt: %v", s.id, err)
			s.paused = "the queued prompt could not start (" + oneLine(err.Error()) + "); ctl resume tries again"
		}
	}
	s.notify.broadcast()
}

func (s *Session) callRunner(ctx context.Context, t *Turn, compact bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.m.logf("session %s: runner panic: %v\n%s", s.id, r, debug.Stack())
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	if s.m.runner == nil {
		return errors.New("no agent runner configured")
	}
	if compact {
		return s.m.runner.Compact(ctx, t)
	}
	return s.m.runner.Run(ctx, t)
}

// keepLogsLocked keeps the session's logs open from its first turn on
// (see logs). The manager closes the logs of the sessions used least
// recently once too many are open.
func (s *Session) keepLogsLocked() {
	s.logs.keep()
	s.m.touch(s)
}

// closeIdleLogs closes the logs of a session the manager evicted, unless
// a turn has started meanwhile.
func (s *Session) closeIdleLogs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == nil {
		s.logs.close()
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.ReplaceAll(s, "\n", " ")
}

// Stop interrupts the running turn, if any, and waits for it to end.
// Queued prompts then run.
func (s *Session) Stop() error {
	if f := s.m.o.OnStop; f != nil {
		f(s.id)
	}
	s.mu.Lock()
	tr := s.turn
	s.mu.Unlock()
	if tr == nil {
		return nil
	}
	tr.cancel(errStopped)
	select {
	case <-tr.done:
		return nil
	case <-time.After(30 * time.Second):
		return errs.E(errs.Timeout, "the turn did not stop within 30s")
	}
}

// Kill clears the queue and stops the running turn.
func (s *Session) Kill() error {
	s.mu.Lock()
	err := s.queue.clear()
	s.notify.broadcast()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.Stop()
}

// Resume continues after a restart: the turn cut short, then the queue.
func (s *Session) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return errs.E(errs.Busy, "a turn is running")
	}
	why := s.paused
	s.paused = ""
	if strings.HasPrefix(why, interrupted) {
		return s.startLocked(s.prev, true)
	}
	if s.queue.len() > 0 {
		err := s.startQueuedLocked()
		if err != nil {
			s.paused = why // still waiting, as before the resume
		}
		return err
	}
	return errs.E(errs.Invalid, "nothing to resume")
}

// startQueuedLocked starts a turn for the first queued prompt. The prompt
// leaves the queue only once the turn has begun with it (in the history,
// its turn_start event naming it): a crash in between leaves it in both,
// which load settles, and a turn that cannot start leaves it queued.
func (s *Session) startQueuedLocked() error {
	p, n, ok := s.queue.head()
	if !ok {
		return nil
	}
	t := s.newTurn(p, false)
	t.queued = n
	if err := s.launchLocked(t, false); err != nil {
		return err
	}
	if err := s.queue.drop(n); err != nil {
		// Begun and still queued on disk: the next load settles it.
		s.m.logf("session %s: queue: %v", s.id, err)
	}
	s.notify.broadcast()
	return nil
}

const interrupted = "interrupted by restart"

// Compact asks the runner to summarize the history now.
func (s *Session) Compact() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return errs.E(errs.Busy, "a turn is running; compact after it (or ctl stop)")
	}
	return s.launchLocked(s.newTurn("", false), true)
}

// Clear starts the history afresh; the old one is kept in history/.
func (s *Session) Clear() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return errs.E(errs.Busy, "a turn is running")
	}
	if err := s.archiveHistoryLocked(); err != nil {
		return err
	}
	s.logs.reopen("context.jsonl")
	if err := writeAtomic(s.ContextPath(), nil, 0600); err != nil {
		return err
	}
	s.chatLocked(":: history cleared (kept in history/)\n", true)
	s.eventLocked("clear", nil)
	return nil
}

// archiveHistoryLocked copies the current history to history/<time>.jsonl.
func (s *Session) archiveHistoryLocked() error {
	b, err := os.ReadFile(s.ContextPath())
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	dir := filepath.Join(s.dir, "history")
	if err := os.MkdirAll(dir, 0700); err != nil {
		return err
	}
	name := time.Now().UTC().Format("20060102T150405.000000000Z") + ".jsonl"
	return writeAtomic(filepath.Join(dir, name), b, 0600)
}

// syncSlots bounds the fsyncs promptLocked has running in goroutines.
var syncSlots = make(chan struct{}, 32)

// promptLocked appends a prompt's record to the history, durably. The
// first prompt of a new session also makes the session durable (New
// left that to it): meta.json, the directory with the files the prompt
// made (chat, context.jsonl), and the directory's entry in the
// sessions directory. Their fsyncs and the record's go to the disk at
// once: on the disk measured, four at once took 0.85-1.06 ms where one
// after another took 1.26-1.45 (docs/bench.md).
func (s *Session) promptLocked(rec []byte) error {
	if !s.unsynced {
		return s.appendLocked("context.jsonl", rec, true)
	}
	if err := s.appendLocked("context.jsonl", rec, false); err != nil {
		return err
	}
	paths := []string{filepath.Join(s.dir, "meta.json"), s.dir, filepath.Dir(s.dir)}
	// As before, a directory that cannot be synced is not the prompt's
	// failure. A goroutine in fsync holds a thread: beyond syncSlots at
	// once in the daemon (1,000 first prompts at once, say), the rest
	// are made one after another by the prompt itself.
	var wg sync.WaitGroup
	for _, p := range paths {
		select {
		case syncSlots <- struct{}{}:
			wg.Go(func() {
				syncPath(p)
				<-syncSlots
			})
		default:
			syncPath(p)
		}
	}
	err := syncPath(filepath.Join(s.dir, "context.jsonl"))
	wg.Wait()
	if err == nil {
		s.unsynced = false
	}
	return err
}
