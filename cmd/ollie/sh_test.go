package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
)

// words is a reply long enough to watch it stream: w1 w2 ... wN.
func words(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "w%d ", i)
	}
	return strings.TrimSpace(b.String())
}

func shScript() *llmtest.Script {
	return &llmtest.Script{
		Models:  []llmtest.Model{{ID: "base"}, {ID: "MODEL_A"}, {ID: "MODEL_B"}},
		Latency: llmtest.Duration(3 * time.Millisecond), // per 4 characters
		Rules: []llmtest.Rule{
			{If: `^say hello\n*$`, Then: llmtest.Turn{Text: "hello"}},
			{If: `^/slash`, Then: llmtest.Turn{Text: "slashed"}},
			{If: `^stream please`, Then: llmtest.Turn{Text: words(250)}},
			{If: `^be slow`, Then: llmtest.Turn{Text: strings.Repeat("slowly ", 3000)}},
			{If: `^use a tool`, Then: llmtest.Turn{Text: "Let me look.", Calls: []llmtest.Call{
				llmtest.ExecuteCode("sh", "for i in 1 2 3 4 5 6; do echo line $i; done")}}},
		},
		Default: &llmtest.Turn{Text: "done"},
	}
}

// TestShCommands drives ollie sh with lines on standard input (no
// terminal: no line editing, each line echoed) through every command.
func TestShCommands(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, shScript())
	e.ok("sh", `echo "cwd=$PWD name=first" >s/new && printf 'GREETING=hi\nAPI_TOKEN=xyz\n' >s/first/env`)
	id := e.sessions()[0]
	lines := []string{
		"say hello", "use a tool", "/usage", "/cost", "/model", "/model MODEL_B", "/backend", "/sessions",
		`!echo "greeting=$GREETING token=${API_TOKEN-unset} in $PWD"; exit 3`,
		"//slash text", "/q say hello", "/clear", "/compact", "/stop", "/nosuch", "/model bad\tname",
		"/new", "/switch first", "/switch nosuch", "/exit", "say hello after exit",
	}
	out, errs, code := e.run("sh", "ollie sh", strings.Join(lines, "\n")+"\n")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// The model in use: the first the backend lists once the daemon has
	// asked it (WarmBackend asks at start), "(default)" before.
	greeting := "session " + id + " (first) (resumed) in " + e.cwd + ", model "
	if !strings.Contains(out, greeting+"base; /help for help\n") && !strings.Contains(out, greeting+"(default); /help for help\n") {
		t.Errorf("output lacks %q followed by base or (default)", greeting)
	}
	for _, want := range []string{
		"> say hello\nhello\n[idle · 1 requests · ",
		"Let me look.\n⚙ sh: for i in 1 2 3 4 5 6; do echo line $i; done\n  │ line 1\n  │ line 2\n  │ line 3\n  │ line 4\n  │ … 2 more lines\ndone\n",
		"> /usage\ninput ", "requests 3\n", "context ",
		"> /cost\nturn 0\nsession 0\n",
		// cfg shows the model and backend in use where none is set.
		"> /model\nmodel base\noffered: base MODEL_A MODEL_B\n> /model MODEL_B\nmodel MODEL_B\n",
		"> /backend\nbackend ollama\nollama ollama " + e.llm.URL,
		"> /sessions\n* " + id + "  idle",
		"greeting=hi token=unset in " + e.cwd + "\n[exit 3]\n",
		"> //slash text\nslashed\n",
		"> /q say hello\n» say hello\nhello\n",
		":: history cleared",
		"> /nosuch\nerror: unknown command /nosuch; /help lists them\n",
		"> /model bad\tname\nerror: write " + e.mnt + "/s/" + id + "/ctl: refused (the daemon's log says why)\n",
		"> /new\nsession ",
		"(new) in " + e.cwd,
		"> /switch first\nsession " + id + " (first) (resumed)",
		"> /switch nosuch\nerror: no session \"nosuch\"\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "after exit") || t.Failed() {
		t.Errorf("output:\n%s\nstderr:\n%s", out, errs)
	}
	if cfg := e.read("s/first/cfg"); !strings.Contains(cfg, "model=MODEL_B\n") {
		t.Errorf("/model MODEL_B: cfg is\n%s", cfg)
	}
	texts, _ := e.userTexts()
	if !strings.Contains(strings.Join(texts, "\n"), "/slash text") {
		t.Errorf("//slash text did not ask /slash text: %q", texts)
	}
	if ids := e.sessions(); len(ids) != 2 {
		t.Errorf("sessions: %v, want first and the one of /new", ids)
	}
	// The script in the tree runs the same shell on the tree it lives in.
	out, errs, code = e.run("sh", "s/sh -new", "say hello\n")
	if code != 0 || !strings.Contains(out, "(new) in "+e.cwd) || !strings.Contains(out, "> say hello\nhello\n") {
		t.Errorf("s/sh: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestShErrors: without a tree, ollie sh says what to do.
func TestShErrors(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0700)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sh", "-mount", filepath.Join(dir, "nowhere")}, "ollie sh: no ollie tree at " + dir + "/nowhere: is the daemon running? (ollie start, or -mount DIR)\n"},
		{[]string{"sh", "-mount", empty}, "ollie sh: nothing is mounted on " + empty + ": is the daemon running? (ollie start)\n"},
		{[]string{"sh"}, "ollie sh: no ollie tree at " + dir + "/mnt/ollie: is the daemon running? (ollie start, or -mount DIR)\n"},
		{[]string{"sh", "-new", "-s", "x"}, "ollie sh: -new and -s exclude each other\n"},
	} {
		if out, code := ollie(t, env, "", c.args...); code == 0 || !strings.HasPrefix(out, c.want) {
			t.Errorf("ollie %s: exit %d, %q; want %q", strings.Join(c.args, " "), code, out, c.want)
		}
	}
}

// tmuxShell is ollie sh in a terminal: a tmux session of its own.
type tmuxShell struct {
	t      *testing.T
	e      *frontEnv
	sock   string
	target string // the tmux session of the current run
	run    int    // runs started
}

func newTmux(t *testing.T, e *frontEnv) *tmuxShell {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("OLLIE_REQUIRE_FUSE") != "" {
			t.Fatal("tmux is not installed (./test.sh installs it)")
		}
		t.Skip("tmux is not installed (./test.sh installs it)")
	}
	m := &tmuxShell{t: t, e: e, sock: filepath.Join(e.rt, "tmux")}
	t.Cleanup(func() { m.cmd("kill-server").Run() }) // the server may be gone already
	return m
}

func (m *tmuxShell) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-S", m.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = append(m.e.env, "TERM=xterm-256color")
	return cmd
}

// tmux runs a tmux command; a failure fails the test.
func (m *tmuxShell) tmux(args ...string) string {
	m.t.Helper()
	out, err := m.cmd(args...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs `ollie sh` as a user types it in the project directory, in
// a new tmux session. The previous run's session, if any, is killed only
// once the new one exists, so the tmux server never runs out of sessions
// (it would exit, racing the next new-session). Each run prints EXITED<n>.
func (m *tmuxShell) start() {
	m.t.Helper()
	m.run++
	old := m.target
	m.target = fmt.Sprintf("t%d", m.run)
	m.tmux("new-session", "-d", "-s", m.target, "-x", "120", "-y", "50", "-c", m.e.cwd,
		fmt.Sprintf(`ollie sh; echo "EXITED%d $?"; sleep 60`, m.run))
	if old != "" {
		m.tmux("kill-session", "-t", old)
	}
}

func (m *tmuxShell) keys(keys ...string) {
	m.t.Helper()
	m.tmux(append([]string{"send-keys", "-t", m.target}, keys...)...)
}

func (m *tmuxShell) screen() string {
	m.t.Helper()
	return m.tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", m.target)
}

// waitFor waits until the screen shows want and returns the screen.
func (m *tmuxShell) waitFor(want string) string {
	m.t.Helper()
	return m.waitUntil(fmt.Sprintf("the screen shows %q", want), func(s string) bool { return strings.Contains(s, want) })
}

// waitUntil waits until ok holds for the screen and returns the screen.
func (m *tmuxShell) waitUntil(what string, ok func(screen string) bool) string {
	m.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := m.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("timed out waiting until %s:\n%s", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShInTerminal: start, ask, watch the answer stream, /usage, Ctrl-C
// during a slow turn, Ctrl-C twice to leave, and the history kept for
// the next run.
func TestShInTerminal(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, shScript())
	m := newTmux(t, e)
	m.start()
	m.waitFor("(new) in " + e.cwd)
	id := e.sessions()[0]
	prompt := id[strings.LastIndexByte(id, '-')+1:] + "> "
	m.waitFor(prompt)

	m.keys("stream please", "Enter")
	// Streamed: part of the reply shows before the rest has arrived.
	partial := false
	for {
		s := m.waitFor("w1 ")
		if strings.Contains(s, "w250") {
			break
		}
		partial = true
		time.Sleep(10 * time.Millisecond)
	}
	if !partial {
		t.Errorf("the reply showed all at once, not streamed")
	}
	m.waitFor("w249 w250\n[idle · 1 requests · ")

	m.keys("/usage", "Enter")
	m.waitFor("> /usage\ninput ")
	m.waitFor("requests 1\ncontext ")

	m.keys("be slow", "Enter")
	m.waitFor("slowly slowly slowly")
	m.keys("C-c")
	// The turn is stopped, then the prompt is drawn again.
	m.waitUntil("the prompt is back after the stopped turn", func(s string) bool {
		return strings.Contains(s, ":: stopped\n[idle") && strings.HasSuffix(strings.TrimSpace(s), strings.TrimSpace(prompt))
	})
	if st := e.read("s/" + id + "/state"); st != "idle\n" {
		t.Errorf("state after Ctrl-C: %q", st)
	}
	if chat := e.read("s/" + id + "/chat"); !strings.Contains(chat, ":: stopped\n") || strings.Count(chat, "slowly") >= 3000 {
		t.Errorf("the slow turn was not cut short")
	}

	m.keys("C-c")
	m.waitFor("(Ctrl-C again or Ctrl-D to leave; the session stays)")
	m.keys("C-c")
	m.waitFor("EXITED1 0")
	hist, err := os.ReadFile(filepath.Join(e.home, ".local/state/ollie/sh_history"))
	if err != nil || string(hist) != "stream please\n/usage\nbe slow\n" {
		t.Errorf("history file: %q, %v", hist, err)
	}

	// Again: the session is resumed, the history is there (Up Up).
	m.start()
	m.waitFor("session " + id + " (resumed)")
	m.keys("Up", "Up")
	m.waitFor(prompt + "/usage")
	m.keys("C-u", "C-d")
	m.waitFor("EXITED2 0")
}

// TestShInterruptBetweenLines: readline makes the terminal raw only while
// it reads a line, so a Ctrl-C typed while ollie sh draws (catching up,
// saying how to leave) arrives as a SIGINT, not as a key. Those count
// too: two SIGINTs at an idle prompt leave, as two Ctrl-C keys do.
func TestShInterruptBetweenLines(t *testing.T) {
	t.Parallel() // a daemon, a mount and a model of its own
	e := newFrontEnv(t, shScript())
	m := newTmux(t, e)
	m.start()
	m.waitFor("(new) in " + e.cwd)
	id := e.sessions()[0]
	m.waitFor(id[strings.LastIndexByte(id, '-')+1:] + "> ")
	pid := m.shellPid()
	syscall.Kill(pid, syscall.SIGINT)
	m.waitFor("(Ctrl-C again or Ctrl-D to leave; the session stays)")
	syscall.Kill(pid, syscall.SIGINT)
	m.waitFor("EXITED1 0")
}

// shellPid returns the pid of the running ollie sh: the child of the
// pane's shell.
func (m *tmuxShell) shellPid() int {
	m.t.Helper()
	pane := strings.TrimSpace(m.tmux("display-message", "-p", "-t", m.target, "#{pane_pid}"))
	b, err := os.ReadFile("/proc/" + pane + "/task/" + pane + "/children")
	if err != nil {
		m.t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		m.t.Fatalf("the pane's shell %s has children %q, want ollie sh alone", pane, f)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		m.t.Fatal(err)
	}
	return pid
}
