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

// Turn is the handle a Runner uses to read and write its session.
type Turn struct {
	S      *Session
	Prompt string
	Resume bool // continuing a turn cut by a restart
}

// startLocked starts a turn for prompt; it returns once the prompt is on
// disk and the state is running.
func (s *Session) startLocked(prompt string, resume bool) error {
	return s.launchLocked(&Turn{S: s, Prompt: prompt, Resume: resume}, false)
}

func (s *Session) launchLocked(t *Turn, compact bool) error {
	if !t.Resume && !compact {
		line := "user: " + strings.TrimRight(t.Prompt, "\n") + "\n"
		if err := s.chatLocked(line, false); err != nil {
			return errs.E(errs.Other, "chat", err)
		}
		if s.unsynced {
			s.syncDirsLocked()
		}
		msg, _ := json.Marshal(map[string]string{"role": "user", "text": t.Prompt})
		if err := s.appendLocked("context.jsonl", append(msg, '\n'), true); err != nil {
			return errs.E(errs.Other, "history", err)
		}
		s.offset = s.chatSize.Load()
		s.prev = t.Prompt
	}
	s.lastErr = ""
	s.m.turns.Add(1)
	s.openLogsLocked()
	ctx, cancel := context.WithCancelCause(context.Background())
	tr := &turn{cancel: cancel, done: make(chan struct{})}
	s.turn = tr
	s.eventLocked("turn_start", map[string]any{"resume": t.Resume, "compact": compact})
	if compact {
		s.setStateLocked(Compacting)
	} else {
		s.setStateLocked(Running)
	}
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
	switch {
	case stopped:
		s.chatLocked(":: stopped\n", false)
		data["stopped"] = true
		s.setStateLocked(Idle)
	case err != nil:
		s.lastErr = s.m.o.Redact.String(oneLine(err.Error()))
		s.chatLocked("error: "+s.lastErr+"\n", false)
		data["error"] = s.lastErr
		s.setStateLocked(Error)
	default:
		s.setStateLocked(Idle)
	}
	s.eventLocked("turn_end", data)
	s.saveUsageLocked()
	s.turn = nil
	close(tr.done)
	if len(s.queue) > 0 && s.paused == "" && !s.removed.Load() && !s.m.closing.Load() {
		next := s.queue[0]
		if err := s.saveQueueLocked(s.queue[1:]); err == nil {
			if err := s.startLocked(next, false); err != nil {
				s.m.logf("session %s: start queued prompt: %v", s.id, err)
			}
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

// openLogsLocked keeps the session's logs open from its first turn on,
// so a turn opens no file: creating and opening files is what costs most
// in a turn on ext4. The manager closes the logs of the sessions used
// least recently once too many are open.
func (s *Session) openLogsLocked() {
	if s.open == nil {
		s.open = map[string]*appendFile{}
	}
	for _, name := range []string{"chat", "context.jsonl", "events.jsonl"} {
		if s.open[name] != nil {
			continue
		}
		if a, err := openAppend(filepath.Join(s.dir, name)); err == nil {
			s.open[name] = a
		}
	}
	s.m.touch(s)
}

func (s *Session) closeLogsLocked() {
	for _, a := range s.open {
		a.close()
	}
	s.open = nil
	if s.usageF != nil {
		s.usageF.Close()
		s.usageF = nil
	}
}

// closeIdleLogs closes the logs of a session the manager evicted, unless
// a turn has started meanwhile.
func (s *Session) closeIdleLogs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == nil {
		s.closeLogsLocked()
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
	err := s.saveQueueLocked(nil)
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
	if len(s.queue) > 0 {
		next := s.queue[0]
		if err := s.saveQueueLocked(s.queue[1:]); err != nil {
			return err
		}
		return s.startLocked(next, false)
	}
	return errs.E(errs.Invalid, "nothing to resume")
}

const interrupted = "interrupted by restart"

// Compact asks the runner to summarize the history now.
func (s *Session) Compact() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return errs.E(errs.Busy, "a turn is running; compact after it (or ctl stop)")
	}
	return s.launchLocked(&Turn{S: s}, true)
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
	s.reopenLocked("context.jsonl")
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

// syncDirsLocked makes a new session's directory durable: its files, the
// directory itself and its entry in the sessions directory.
func (s *Session) syncDirsLocked() {
	if f, err := os.Open(filepath.Join(s.dir, "meta.json")); err == nil {
		f.Sync()
		f.Close()
	}
	syncDir(s.dir)
	syncDir(filepath.Dir(s.dir))
	s.unsynced = false
}

// reopenLocked closes an open log that is about to be replaced by a new
// file; the next append opens the new one.
func (s *Session) reopenLocked(name string) {
	if a := s.open[name]; a != nil {
		a.close()
		delete(s.open, name)
	}
}
