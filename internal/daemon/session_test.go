package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

func sessionSetup(t *testing.T) (*client.Fsys, *daemon.Daemon, *testutil.EchoRunner) {
	cfg := testutil.Home(t, nil)
	r := testutil.NewEchoRunner()
	d := testutil.Daemon(t, cfg, daemon.Options{Runner: r})
	return testutil.Dial(t, cfg), d, r
}

// newSession creates a session through s/new and returns its id.
func newSession(t *testing.T, fsys *client.Fsys, spec string) string {
	t.Helper()
	f, err := fsys.Open(ctx, "s/new", plan9.ORDWR)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Clunk(ctx)
	if _, err := f.WriteAt(ctx, []byte(spec), 0); err != nil {
		t.Fatalf("write %q to s/new: %v", spec, err)
	}
	b := make([]byte, 100)
	n, err := f.ReadAt(ctx, b, 0)
	if err != nil && n == 0 {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b[:n]))
}

func read(t *testing.T, fsys *client.Fsys, p string) string {
	t.Helper()
	b, err := fsys.ReadFile(ctx, p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func TestPromptWaitReplyNeverRaces(t *testing.T) {
	fsys, _, _ := sessionSetup(t)
	id := newSession(t, fsys, "cwd="+t.TempDir())
	for i := 0; i < 200; i++ {
		q := "question " + itoa(i)
		if err := write(fsys, "s/"+id+"/prompt", []byte(q+"\n")); err != nil {
			t.Fatal(err)
		}
		if w := read(t, fsys, "s/"+id+"/wait"); w != "idle\n" {
			t.Fatalf("wait = %q", w)
		}
		if r := read(t, fsys, "s/"+id+"/reply"); r != "echo: "+q+"\n" {
			t.Fatalf("turn %d: reply = %q", i, r)
		}
	}
	chat := read(t, fsys, "s/"+id+"/chat")
	if !strings.Contains(chat, "user: question 199\nassistant: echo: question 199\n") {
		t.Errorf("chat tail = %q", chat[max(0, len(chat)-200):])
	}
	if u := read(t, fsys, "s/"+id+"/usage"); !strings.Contains(u, "input 2000\n") || !strings.Contains(u, "requests 200\n") {
		t.Errorf("usage = %q", u)
	}
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string { b, _ := json.Marshal(i); return string(b) }())
}

func TestNewClone(t *testing.T) {
	fsys, _, _ := sessionSetup(t)
	dir := t.TempDir()
	if got := read(t, fsys, "s/new"); !strings.Contains(got, "cwd=") {
		t.Errorf("fresh read of s/new = %q, want the key template", got)
	}
	id := newSession(t, fsys, "cwd="+dir+"\nname=first\n")
	if len(id) != 12 || id[6] != '-' {
		t.Errorf("id %q is not TTTTTT-RRRRR", id)
	}
	// A unique prefix names the session too.
	if got := read(t, fsys, "s/"+id[:8]+"/state"); got != "idle\n" {
		t.Errorf("state through the prefix %s = %q", id[:8], got)
	}
	// The plain write-only form, with a name to find it by, on one line.
	if err := write(fsys, "s/new", []byte("cwd="+dir+" name=second model=some model\n")); err != nil {
		t.Fatal(err)
	}
	cfg := read(t, fsys, "s/second/cfg")
	if !strings.Contains(cfg, "model=some model\n") || !strings.Contains(cfg, "cwd="+dir+"\n") {
		t.Errorf("s/second/cfg = %q", cfg)
	}
	idx := read(t, fsys, "s/idx")
	if !strings.Contains(idx, id+"\tidle\tdefault\t") || strings.Count(idx, "\n") != 2 {
		t.Errorf("s/idx = %q", idx)
	}
	ents, err := fsys.ReadDir(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name] = true
	}
	if !names["first"] || !names["second"] || !names["new"] || !names["idx"] {
		t.Errorf("s/ lists %v", names)
	}
	for _, bad := range []struct{ spec, want string }{
		{"name=x", "cwd is required"},
		{"cwd=relative/path", "not an absolute path"},
		{"cwd=/nonexistent/dir", "not a directory"},
		{"cwd=" + dir + " name=new", "bad session name"},
		{"cwd=" + dir + " name=bad/name", "bad session name"},
		{"cwd=" + dir + " name=first", "already called"},
		{"cwd=" + dir + " agent=nosuch", "no agent"},
		{"cwd=" + dir + " backend=nosuch", "no backend"},
		{"cwd=" + dir + " colour=red", "unknown key"},
		{"garbage", "key=value"},
		{"\x00\xff", "not UTF-8"},
		{"cwd=" + dir + " name=a\x00b\n", "s/new: NUL byte"},
		{"cwd=" + dir + " name=a\x00b", "s/new: NUL byte"},
	} {
		err := write(fsys, "s/new", []byte(bad.spec))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("s/new <- %q: %v, want %q", bad.spec, err, bad.want)
		}
	}
	if n := strings.Count(read(t, fsys, "s/idx"), "\n"); n != 2 {
		t.Errorf("bad specs made sessions: %d in idx", n)
	}
}

func TestQueueAndFifo(t *testing.T) {
	fsys, _, r := sessionSetup(t)
	id := newSession(t, fsys, "cwd="+t.TempDir())
	p := "s/" + id + "/"
	if err := write(fsys, p+"prompt", []byte("block until released\n")); err != nil {
		t.Fatal(err)
	}
	if st := read(t, fsys, p+"state"); st != "running\n" {
		t.Fatalf("state = %q", st)
	}
	for _, q := range []string{"second\n", "third\n", "fourth\n"} {
		if err := write(fsys, p+"fifo.in", []byte(q)); err != nil {
			t.Fatal(err)
		}
	}
	if err := write(fsys, p+"prompt", []byte("fifth\n")); err != nil {
		t.Fatal(err)
	}
	want := "\"second\\n\"\n\"third\\n\"\n\"fourth\\n\"\n\"fifth\\n\"\n"
	if q := read(t, fsys, p+"queue"); q != want {
		t.Fatalf("queue = %q", q)
	}
	// stat and ls never pop.
	for i := 0; i < 3; i++ {
		fsys.Stat(ctx, p+"fifo.out")
		fsys.ReadDir(ctx, "s/"+id)
	}
	if q := read(t, fsys, p+"queue"); q != want {
		t.Fatalf("stat popped: queue = %q", q)
	}
	if got := read(t, fsys, p+"fifo.out"); got != "second\n" {
		t.Fatalf("fifo.out = %q", got)
	}
	r.Release()
	if w := read(t, fsys, p+"wait"); w != "idle\n" {
		t.Fatalf("wait = %q", w)
	}
	if q := read(t, fsys, p+"queue"); q != "" {
		t.Errorf("queue after wait = %q", q)
	}
	chat := read(t, fsys, p+"chat")
	if strings.Contains(chat, "echo: second") || !strings.Contains(chat, "echo: fifth") {
		t.Errorf("the popped prompt ran, or a queued one did not: %q", chat)
	}
}

// TestStatewaitAndFlush shows that reads of statewait and wait block at
// the server until the state changes or a Tflush ends them: each read is
// seen outstanding there before the test acts.
func TestStatewaitAndFlush(t *testing.T) {
	fsys, d, _ := sessionSetup(t)
	st := &d.Server.Stats
	id := newSession(t, fsys, "cwd="+t.TempDir())
	p := "s/" + id + "/"
	sw, err := fsys.Open(ctx, p+"statewait", plan9.OREAD)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Clunk(ctx)
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 100)
		n, _ := sw.Read(ctx, b, 0)
		got <- string(b[:n])
	}()
	// The state is idle when the read arrives; "running" can only come
	// from a read that waited for the prompt.
	testutil.Outstanding(t, st, 1, "the read of statewait")
	if err := write(fsys, p+"prompt", []byte("block\n")); err != nil {
		t.Fatal(err)
	}
	if s := wait(t, got, "statewait after the state changed"); s != "running\n" {
		t.Errorf("statewait = %q", s)
	}
	// A read of wait blocks while the turn runs; a Tflush ends it at once.
	wf, err := fsys.Open(ctx, p+"wait", plan9.OREAD)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := wf.Read(rctx, make([]byte, 100), 0); done <- err }()
	testutil.Outstanding(t, st, 1, "the read of wait")
	flushed := st.Flushed.Load()
	cancel()
	if err := wait(t, done, "the flushed read of wait"); !errs.Is(err, errs.Interrupted) {
		t.Errorf("flushed wait: %v", err)
	}
	if n := st.Flushed.Load() - flushed; n != 1 {
		t.Errorf("%d Tflushes cancelled the read of wait, want 1", n)
	}
	wf.Clunk(ctx)
	if err := write(fsys, p+"ctl", []byte("stop\n")); err != nil {
		t.Fatal(err)
	}
	if st := read(t, fsys, p+"state"); st != "idle\n" {
		t.Errorf("state after stop = %q", st)
	}
	if !strings.Contains(read(t, fsys, p+"chat"), ":: stopped\n") {
		t.Error("stop not shown in chat")
	}
}

// wait receives from c, failing the test if nothing comes.
func wait[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(testutil.HangTimeout):
		t.Fatalf("%s: hung", what)
		panic("unreachable")
	}
}

// TestEventsFollow reads events to the end; a read there waits for the
// next event, which the test makes only once the read is outstanding at
// the server.
func TestEventsFollow(t *testing.T) {
	fsys, d, _ := sessionSetup(t)
	id := newSession(t, fsys, "cwd="+t.TempDir())
	p := "s/" + id + "/"
	write(fsys, p+"prompt", []byte("one\n"))
	read(t, fsys, p+"wait")
	ev, err := fsys.Open(ctx, p+"events", plan9.OREAD)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Clunk(ctx)
	var all []byte
	buf := make([]byte, 8192)
	for !strings.Contains(string(all), `"turn_end"`) {
		n, err := ev.Read(ctx, buf, int64(len(all)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, buf[:n]...)
	}
	lines := strings.Split(strings.TrimSpace(string(all)), "\n")
	// At the end, a read blocks until the next event.
	got := make(chan string, 1)
	go func() {
		n, _ := ev.Read(ctx, buf, int64(len(all)))
		got <- string(buf[:n])
	}()
	testutil.Outstanding(t, &d.Server.Stats, 1, "the read at the end of events")
	select {
	case s := <-got:
		t.Fatalf("read at the end of events returned %q at once", s)
	default:
	}
	write(fsys, p+"prompt", []byte("two\n"))
	s := wait(t, got, "events after a new event")
	var e session.Event
	if err := json.Unmarshal([]byte(strings.SplitN(s, "\n", 2)[0]), &e); err != nil || e.Seq != int64(len(lines)) {
		t.Errorf("next event %q (%v), want seq %d", s, err, len(lines))
	}
	for i, l := range lines {
		var e session.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Seq != int64(i) {
			t.Errorf("event %d = %q (%v)", i, l, err)
		}
	}
}

func TestCtlAndCfgErrors(t *testing.T) {
	fsys, _, _ := sessionSetup(t)
	id := newSession(t, fsys, "cwd="+t.TempDir())
	p := "s/" + id + "/"
	for _, bad := range []struct{ file, data, want string }{
		{"ctl", "bogus\n", "unknown control message"},
		{"ctl", "\n", "empty control message"},
		{"ctl", "stop now\n", "takes no argument"},
		{"ctl", "rn\n", "needs an argument"},
		{"ctl", "rn bad/name\n", "bad session name"},
		{"ctl", "backend nosuch\n", "no backend"},
		{"ctl", "resume\n", "nothing to resume"},
		{"cfg", "temperature=hot\n", "temperature"},
		{"cfg", "temperature=5\n", "0 to 2"},
		{"cfg", "max_steps=-3\n", "from 1 to 10000"},
		{"cfg", "state=idle\n", "read-only"},
		{"cfg", "colour=red\n", "unknown key"},
		{"cfg", "cwd=/no/such/dir\n", "not a directory"},
		{"cfg", "model=ok temperature=9\n", "0 to 2"},
		{"env", "not a pair\n", "KEY=VALUE"},
		{"env", "1BAD=x\n", "KEY=VALUE"},
		{"prompt", "   \n", "empty prompt"},
		{"prompt", "\xff\xfe\n", "not UTF-8"},
		{"plan", strings.Repeat("x", 300<<10), "256 KiB"},
		{"plan", "a\x00b", "plan: NUL byte"},
	} {
		err := write(fsys, p+bad.file, []byte(bad.data))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s <- %q: %v, want %q", bad.file, bad.data, err, bad.want)
		}
	}
	if cfg := read(t, fsys, p+"cfg"); !strings.Contains(cfg, "model=\n") {
		t.Errorf("a refused cfg write changed something: %q", cfg)
	}
	if err := write(fsys, p+"cfg", []byte("model=m2 temperature=0.5\nmax_steps=9\n")); err != nil {
		t.Fatal(err)
	}
	cfg := read(t, fsys, p+"cfg")
	for _, w := range []string{"model=m2\n", "temperature=0.5\n", "max_steps=9\n", "state=idle\n"} {
		if !strings.Contains(cfg, w) {
			t.Errorf("cfg lacks %q: %q", w, cfg)
		}
	}
	if err := write(fsys, p+"env", []byte("GITHUB_TOKEN=ghp_secret\nREGION=eu\nsecret PIN=1234\n")); err != nil {
		t.Fatal(err)
	}
	env := read(t, fsys, p+"env")
	if strings.Contains(env, "ghp_secret") || strings.Contains(env, "1234") || !strings.Contains(env, "REGION=eu") {
		t.Errorf("env shows %q", env)
	}
	if err := write(fsys, p+"plan", []byte("1. do it\n")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, fsys, p+"plan"); got != "1. do it\n" {
		t.Errorf("plan = %q", got)
	}
}

func TestRemoveAndRename(t *testing.T) {
	fsys, d, _ := sessionSetup(t)
	id := newSession(t, fsys, "cwd="+t.TempDir())
	write(fsys, "s/"+id+"/prompt", []byte("hello\n"))
	read(t, fsys, "s/"+id+"/wait")
	if err := fsys.Rename(ctx, "s/"+id, "s/renamed"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, fsys, "s/renamed/reply"); got != "echo: hello\n" {
		t.Errorf("reply via the new name = %q", got)
	}
	if err := fsys.Remove(ctx, "s/renamed/chat"); err != nil {
		t.Errorf("rm of a session file (as rm -r does first): %v", err)
	}
	if err := fsys.Remove(ctx, "s/renamed"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(ctx, "s/"+id); !errs.Is(err, errs.NotExist) {
		t.Errorf("removed session still there: %v", err)
	}
	tr := filepath.Join(d.Config.DataDir, "tr", id+"-renamed.chat")
	if b, err := os.ReadFile(tr); err != nil || !strings.Contains(string(b), "echo: hello") {
		t.Errorf("transcript %s: %q, %v", tr, b, err)
	}
}

func TestSessionsSurviveRestart(t *testing.T) {
	cfg := testutil.Home(t, nil)
	r := testutil.NewEchoRunner()
	d, err := daemon.Start(cfg, daemon.Options{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	fsys := testutil.Dial(t, cfg)
	id := newSession(t, fsys, "cwd="+t.TempDir()+" name=keep")
	write(fsys, "s/keep/prompt", []byte("first\n"))
	read(t, fsys, "s/keep/wait")
	write(fsys, "s/keep/plan", []byte("the plan\n"))
	write(fsys, "s/keep/prompt", []byte("block forever\n"))
	write(fsys, "s/keep/fifo.in", []byte("later\n"))
	offset := read(t, fsys, "s/keep/offset")
	// Simulate the crash: the turn never ends, the daemon goes away.
	d.Sessions = nil
	fsys.Close()
	d.Close() // stops the blocked turn; the queue stays on disk
	// Make the events log look as a kill -9 leaves it: cut after turn_start.
	evp := filepath.Join(cfg.DataDir, "s", id, "events.jsonl")
	b, _ := os.ReadFile(evp)
	lines := strings.SplitAfter(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"turn_start"`) {
			os.WriteFile(evp, []byte(strings.Join(lines[:i+1], "")), 0600)
			break
		}
	}
	r2 := testutil.NewEchoRunner()
	r2.Release() // the resumed "block" turn may finish
	testutil.Daemon(t, cfg, daemon.Options{Runner: r2})
	fsys2 := testutil.Dial(t, cfg)
	chat := read(t, fsys2, "s/keep/chat")
	if !strings.Contains(chat, "echo: first") || !strings.Contains(chat, ":: interrupted by restart") {
		t.Errorf("chat after restart = %q", chat)
	}
	if got := read(t, fsys2, "s/keep/plan"); got != "the plan\n" {
		t.Errorf("plan after restart = %q", got)
	}
	if q := read(t, fsys2, "s/keep/queue"); q != "\"later\\n\"\n" {
		t.Errorf("queue after restart = %q", q)
	}
	if got := read(t, fsys2, "s/keep/offset"); got != offset {
		t.Errorf("offset after restart = %q, before %q (just after the last prompt)", got, offset)
	}
	if w := read(t, fsys2, "s/keep/wait"); !strings.Contains(w, "interrupted by restart") {
		t.Errorf("wait after restart = %q", w)
	}
	if err := write(fsys2, "s/keep/ctl", []byte("resume\n")); err != nil {
		t.Fatal(err)
	}
	if w := read(t, fsys2, "s/keep/wait"); w != "idle\n" {
		t.Errorf("wait after resume = %q", w)
	}
	chat = read(t, fsys2, "s/keep/chat")
	if !strings.Contains(chat, "echo: block forever") || !strings.Contains(chat, "echo: later") {
		t.Errorf("resume did not finish the cut turn and drain the queue: %q", chat)
	}
	if strings.Count(chat, "user: block forever") != 1 {
		t.Errorf("the cut turn's prompt was repeated: %q", chat)
	}
}
