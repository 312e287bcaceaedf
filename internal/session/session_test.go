package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

// newRunner is the echo runner (testutil.EchoRunner) with three more
// kinds of turns: one whose prompt holds "illegal" tries the states only
// the end of a turn may set, then the legal one of calling a tool; "ask"
// asks for consent and fails if denied; "peek" checks what the turn's
// handle is.
func newRunner() *testutil.EchoRunner {
	r := testutil.NewEchoRunner()
	r.Before = func(ctx context.Context, turn *session.Turn) error {
		switch {
		case strings.Contains(turn.Prompt, "illegal"):
			turn.SetState(session.Idle)
			turn.SetState(session.Error)
			turn.SetState(session.CallingTool)
		case turn.Prompt == "ask":
			ok, err := turn.Ask(ctx, "may I?", time.Hour)
			if err == nil && !ok {
				err = errors.New("denied")
			}
			return err
		case turn.Prompt == "peek":
			if _, ok := turn.S.(*session.Session); ok {
				return errors.New("the turn holds the session itself")
			}
			if p := turn.S.TreePath(); p != "s/"+turn.S.ID() {
				return fmt.Errorf("tree path %q", p)
			}
		}
		return nil
	}
	return r
}

func openManager(t *testing.T, dir string, r session.Runner) *session.Manager {
	t.Helper()
	m, err := session.Open(session.Options{Dir: filepath.Join(dir, "s"), TrDir: filepath.Join(dir, "tr"), Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// reload opens the sessions in dir anew, as a restarted daemon does, and
// returns its runner and the session id, as loaded.
func reload(t *testing.T, dir, id string) (*testutil.EchoRunner, *session.Session) {
	t.Helper()
	r := newRunner()
	s, ok := openManager(t, dir, r).Get(id)
	if !ok {
		t.Fatal("the session did not load")
	}
	return r, s
}

func newIn(t *testing.T, m *session.Manager) *session.Session {
	t.Helper()
	s, err := m.New(session.Spec{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wait(t *testing.T, s *session.Session) (session.State, string) {
	t.Helper()
	st, e, err := s.Wait(nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, e
}

func chat(t *testing.T, s *session.Session) string {
	t.Helper()
	b, err := os.ReadFile(s.ChatPath())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// queuedBehindABlock makes a session in a new directory whose turn
// blocks (until r.Release) with q1 and q2 queued behind it.
func queuedBehindABlock(t *testing.T) (dir string, r *testutil.EchoRunner, m *session.Manager, s *session.Session) {
	t.Helper()
	dir = t.TempDir()
	r = newRunner()
	m = openManager(t, dir, r)
	s = newIn(t, m)
	s.Submit("block")
	<-r.Started
	s.Submit("q1")
	s.Submit("q2")
	return dir, r, m, s
}

// TestQueuedPromptLeavesQueueAfterItBegins: a queued prompt leaves the
// queue only once its turn has begun (history, turn_start naming its
// number). Taking it first lost it to a kill -9 between the two
// (TestKill9AfterClose found it). Here the daemon died in between: the
// prompt is in the history, its turn_start on disk, and still queued.
// The load settles it: begun, cut, not queued twice.
func TestQueuedPromptLeavesQueueAfterItBegins(t *testing.T) {
	dir, r, m, s := queuedBehindABlock(t)
	r.Release()
	wait(t, s)
	if got := r.Prompts(); fmt.Sprint(got) != "[block q1 q2]" {
		t.Fatalf("ran %q", got)
	}
	// The turns from the queue say which queued prompt they began with.
	b, _ := os.ReadFile(s.EventsPath())
	if n := strings.Count(string(b), `"queued":`); n != 2 || !strings.Contains(string(b), `"queued":2`) {
		t.Errorf("turn_start events name %d queued prompts:\n%s", n, b)
	}
	if size, _ := s.QueueStat(); size != 0 || len(s.QueueView()) != 0 {
		t.Errorf("an empty queue shows %d bytes: %q", size, s.QueueView())
	}

	// Again, and the daemon dies after q4's turn began, before q4 left
	// the queue: what it left on disk is made here.
	s.Submit("block")
	s.Submit("q3")
	s.Submit("q4")
	s.Submit("q5")
	r.Release()
	wait(t, s)
	m.Close()
	path := filepath.Join(filepath.Dir(s.EventsPath()), "queue.jsonl")
	if err := os.WriteFile(path, []byte("4\n\"q4\"\n\"q5\"\n"), 0600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.EventsPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"seq":999,"time":"2026-12-07T00:00:00Z","type":"turn_start","data":{"compact":false,"queued":5,"resume":false}}`+"\n")
	f.Close()
	_, s2 := reload(t, dir, s.ID())
	if q := s2.Queue(); fmt.Sprint(q) != "[q5]" {
		t.Fatalf("queue after the load %q, want [q5]", q)
	}
	if !strings.Contains(s2.Paused(), "interrupted") {
		t.Errorf("the cut turn is not marked: paused %q", s2.Paused())
	}
	// The numbers go on from the file's: q5 is 6, and 6 is taken next.
	if err := s2.Resume(); err != nil {
		t.Fatal(err)
	}
	wait(t, s2)
	if b, _ := os.ReadFile(path); string(b) != "6\n" {
		t.Errorf("queue.jsonl after the queue ran: %q", b)
	}
}

// A runner cannot make its session idle or failed while its turn runs:
// only the end of the turn does. The attack: a runner that says idle mid
// turn would let a prompt start a second turn beside it.
func TestTurnCannotEndItself(t *testing.T) {
	r := newRunner()
	s := newIn(t, openManager(t, t.TempDir(), r))
	if err := s.Submit("block illegal"); err != nil {
		t.Fatal(err)
	}
	<-r.Started
	testutil.Until(t, "the legal step to calling a tool", func() bool { st, _ := s.State(); return st == session.CallingTool })
	if err := s.Submit("second"); err != nil {
		t.Fatal(err)
	}
	if q := s.Queue(); len(q) != 1 {
		t.Errorf("the second prompt did not wait: queue %q", q)
	}
	r.Release()
	if st, e := wait(t, s); st != session.Idle || e != "" {
		t.Errorf("ended %s %q", st, e)
	}
	if got := r.Prompts(); fmt.Sprint(got) != "[block illegal second]" {
		t.Errorf("ran %q", got)
	}
}

// The handle a turn gets is not the session.
func TestTurnHandle(t *testing.T) {
	s := newIn(t, openManager(t, t.TempDir(), newRunner()))
	s.Submit("peek")
	if st, e := wait(t, s); st != session.Idle {
		t.Fatalf("%s: %s", st, e)
	}
	if got := string(s.ReplyText()); got != "echo: peek\n" {
		t.Errorf("reply %q", got)
	}
}

func TestTurnFailsAndRecovers(t *testing.T) {
	s := newIn(t, openManager(t, t.TempDir(), newRunner()))
	s.Submit("fail now")
	if st, e := wait(t, s); st != session.Error || !strings.Contains(e, "backend said no") {
		t.Fatalf("%s %q", st, e)
	}
	s.Submit("again")
	if st, e := wait(t, s); st != session.Idle || e != "" {
		t.Fatalf("after a new prompt: %s %q", st, e)
	}
	if c := chat(t, s); !strings.Contains(c, "\nerror: unavailable: backend said no\n") || !strings.HasSuffix(c, "assistant: echo: again\n") {
		t.Errorf("chat:\n%s", c)
	}
}

// A consent request: listed while the turn waits in state asking, and
// answered once.
func TestAskThroughTurn(t *testing.T) {
	s := newIn(t, openManager(t, t.TempDir(), newRunner()))
	s.Submit("ask")
	testutil.Until(t, "the request", func() bool { return len(s.Asks()) == 1 })
	if st, _ := s.State(); st != session.Asking {
		t.Errorf("state %s while asking", st)
	}
	id := s.Asks()[0]
	if txt, _ := s.AskText(id); txt != "may I?" {
		t.Errorf("text %q", txt)
	}
	if err := s.Answer(id, "maybe"); !errs.Is(err, errs.Invalid) {
		t.Errorf("a bad answer: %v", err)
	}
	if err := s.Answer(id, "allow\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer(id, "deny"); !errs.Is(err, errs.NotExist) {
		t.Errorf("a second answer: %v", err)
	}
	wait(t, s)
	if got := string(s.ReplyText()); got != "echo: ask\n" {
		t.Errorf("reply %q", got)
	}
}

// Prompts submitted and popped from many goroutines while turns run and
// others wait: each prompt either runs once or is popped once, in the
// order each submitter gave, and none is lost.
func TestSubmitPopConcurrent(t *testing.T) {
	r := newRunner()
	s := newIn(t, openManager(t, t.TempDir(), r))
	const submitters, each = 4, 15
	var mu sync.Mutex
	var popped []string
	stop := session.Spin(3, func(stop <-chan struct{}) bool { // waiters, while it all happens
		st, _ := s.State()
		s.WaitChange(st, stop)
		s.Summary()
		return true
	})
	var subs sync.WaitGroup
	for p := 0; p < submitters; p++ {
		subs.Add(1)
		go func() {
			defer subs.Done()
			for i := 0; i < each; i++ {
				if err := s.Submit(fmt.Sprintf("p%d-%02d", p, i)); err != nil {
					t.Error(err)
				}
				if i%4 == 0 {
					if q, ok, err := s.Pop(); err != nil {
						t.Error(err)
					} else if ok {
						mu.Lock()
						popped = append(popped, q)
						mu.Unlock()
					}
				}
			}
		}()
	}
	subs.Wait()
	wait(t, s)
	stop()
	all := append(r.Prompts(), popped...)
	if len(all) != submitters*each {
		t.Fatalf("%d ran and %d popped of %d", len(r.Prompts()), len(popped), submitters*each)
	}
	sort.Strings(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("%s twice", all[i])
		}
	}
	// Turns of one submitter run in its order.
	last := map[byte]string{}
	for _, p := range r.Prompts() {
		if prev := last[p[1]]; prev > p {
			t.Errorf("%s ran after %s", p, prev)
		}
		last[p[1]] = p
	}
	if q := s.Queue(); len(q) != 0 {
		t.Errorf("left queued: %q", q)
	}
}

// What was queued survives a restart, waits for ctl resume, and then
// runs in order.
func TestQueueSurvivesRestart(t *testing.T) {
	dir, _, m, s := queuedBehindABlock(t)
	m.Close() // stops the turn; the queue stays on disk

	r2, s2 := reload(t, dir, s.ID())
	if q := s2.Queue(); fmt.Sprint(q) != "[q1 q2]" {
		t.Fatalf("queue after restart %q", q)
	}
	if s2.Paused() == "" {
		t.Error("a restart ran the queue by itself")
	}
	if err := s2.Resume(); err != nil {
		t.Fatal(err)
	}
	wait(t, s2)
	if got := r2.Prompts(); fmt.Sprint(got) != "[q1 q2]" {
		t.Errorf("ran %q", got)
	}
	if err := s2.Resume(); !errs.Is(err, errs.Invalid) {
		t.Errorf("resume of nothing: %v", err)
	}
}

func TestStopAndKill(t *testing.T) {
	r := newRunner()
	s := newIn(t, openManager(t, t.TempDir(), r))
	s.Submit("block 1")
	<-r.Started
	s.Submit("q1")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	// The queue then runs: q1 starts.
	if p := <-r.Started; p != "q1" {
		t.Fatalf("after stop ran %q", p)
	}
	wait(t, s)
	s.Submit("block 2")
	<-r.Started
	s.Submit("q2")
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if st, _ := wait(t, s); st != session.Idle {
		t.Errorf("after kill: %s", st)
	}
	if q := s.Queue(); len(q) != 0 {
		t.Errorf("kill left %q", q)
	}
	if got := r.Prompts(); fmt.Sprint(got) != "[block 1 q1 block 2]" {
		t.Errorf("ran %q", got)
	}
	if c := chat(t, s); strings.Count(c, ":: stopped") != 2 {
		t.Errorf("chat:\n%s", c)
	}
}

// Past the bound of sessions with open logs, the least recently used is
// closed; its next turn opens them again and writes where it left off.
func TestOpenLogsEvicted(t *testing.T) {
	r := newRunner()
	m := openManager(t, t.TempDir(), r)
	m.SetMaxOpenLogs(2)
	var ss []*session.Session
	for i := 0; i < 3; i++ {
		s := newIn(t, m)
		s.Submit(fmt.Sprint("first ", i))
		wait(t, s)
		ss = append(ss, s)
	}
	testutil.Until(t, "the eviction of the oldest", func() bool { return !ss[0].LogsOpen() })
	if !ss[1].LogsOpen() || !ss[2].LogsOpen() || m.OpenLogs() != 2 {
		t.Fatalf("open: %v %v (%d)", ss[1].LogsOpen(), ss[2].LogsOpen(), m.OpenLogs())
	}
	ss[0].Submit("second 0")
	wait(t, ss[0])
	if !ss[0].LogsOpen() {
		t.Error("a new turn did not open the logs again")
	}
	testutil.Until(t, "the eviction of the next oldest", func() bool { return !ss[1].LogsOpen() })
	if c := chat(t, ss[0]); c != "user: first 0\nassistant: echo: first 0\nuser: second 0\nassistant: echo: second 0\n" {
		t.Errorf("chat:\n%s", c)
	}
	// A removed session leaves the set.
	if err := m.Remove(ss[2].ID()); err != nil {
		t.Fatal(err)
	}
	if m.OpenLogs() != 1 {
		t.Errorf("%d open after a remove", m.OpenLogs())
	}
}

// cfg applies whole or not at all, refuses the read-only keys, and
// refuses moving a running session.
func TestCfg(t *testing.T) {
	r := newRunner()
	s := newIn(t, openManager(t, t.TempDir(), r))
	before := s.Meta()
	for _, c := range []struct {
		kv   map[string]string
		kind errs.Kind
	}{
		{map[string]string{"name": "x"}, errs.Permission},
		{map[string]string{"sandbox": "none"}, errs.Permission},
		{map[string]string{"nonsense": "1"}, errs.Invalid},
		{map[string]string{"model": "good", "max_steps": "0"}, errs.Invalid},
		{map[string]string{"temperature": "1e3"}, errs.Invalid},
		{map[string]string{"max_tokens": "5 junk"}, errs.Invalid},
		{map[string]string{"cwd": "relative"}, errs.Invalid},
	} {
		if err := s.CheckCfg(c.kv); errs.KindOf(err) != c.kind {
			t.Errorf("check %v: %v", c.kv, err)
		}
		if err := s.SetCfg(c.kv); errs.KindOf(err) != c.kind {
			t.Errorf("set %v: %v", c.kv, err)
		}
		if s.Meta() != before {
			t.Fatalf("%v changed the settings: %+v", c.kv, s.Meta())
		}
	}
	if err := s.SetCfg(map[string]string{"model": "m2", "temperature": "0.5", "max_steps": "7"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range s.Cfg() {
		got[kv[0]] = kv[1]
	}
	if got["model"] != "m2" || got["temperature"] != "0.5" || got["max_steps"] != "7" || got["state"] != "idle" {
		t.Errorf("cfg %v", got)
	}
	s.Submit("block")
	<-r.Started
	if err := s.SetCfg(map[string]string{"cwd": t.TempDir()}); !errs.Is(err, errs.Busy) {
		t.Errorf("cwd during a turn: %v", err)
	}
	if err := s.SetCfg(map[string]string{"model": "m3"}); err != nil {
		t.Errorf("model during a turn: %v", err)
	}
	r.Release()
	wait(t, s)
}

// A transcript holds the chat and the history, redacted of nothing they
// did not hold, under the session's id and label.
func TestSaveTranscript(t *testing.T) {
	dir := t.TempDir()
	s := newIn(t, openManager(t, dir, newRunner()))
	s.Submit("hello")
	wait(t, s)
	out := filepath.Join(dir, "out")
	if err := s.SaveTranscriptTo(out, "job-3"); err != nil {
		t.Fatal(err)
	}
	c, _ := os.ReadFile(filepath.Join(out, s.ID()+"-job-3.chat"))
	h, _ := os.ReadFile(filepath.Join(out, s.ID()+"-job-3.jsonl"))
	if string(c) != chat(t, s) || !strings.Contains(string(h), `"text":"echo: hello"`) {
		t.Errorf("chat %q history %q", c, h)
	}
}

// History leaves out a last record a crash tore (it has no newline: it
// was never acknowledged), and reports a line in the middle that is not
// JSON, which is corruption, by its number.
func TestHistoryTornAndCorrupt(t *testing.T) {
	s := newIn(t, openManager(t, t.TempDir(), newRunner()))
	s.Submit("one")
	if st, e := wait(t, s); st != session.Idle {
		t.Fatalf("%s: %s", st, e)
	}
	whole, err := s.History()
	if err != nil || len(whole) == 0 {
		t.Fatalf("history %d messages, %v", len(whole), err)
	}
	good, err := os.ReadFile(s.ContextPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, torn := range []string{`{"role":"user","te`, `{"role":"user","text":"x"}`, "\x00\x00\x00"} {
		if err := os.WriteFile(s.ContextPath(), append(append([]byte(nil), good...), torn...), 0600); err != nil {
			t.Fatal(err)
		}
		if h, err := s.History(); err != nil || len(h) != len(whole) {
			t.Errorf("with the torn tail %q: %d messages, %v; want %d", torn, len(h), err, len(whole))
		}
	}
	corrupt := append([]byte("{\"role\":\"user\",\"text\":\"a\"}\n{\"role\":\"us\n"), good...)
	if err := os.WriteFile(s.ContextPath(), corrupt, 0600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(); err == nil || !strings.Contains(err.Error(), "line 2 is not JSON") {
		t.Errorf("a corrupt line in the middle: %v", err)
	}
}
