package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/testutil"
	"ollie.dev/ollie/internal/testutil/stack"
)

// The test binary is also the sandbox helper, as ollie itself is.
func TestMain(m *testing.M) { testutil.SandboxMain(m) }

var ctx = context.Background()

// env is a real daemon whose sessions run the real agent loop against a
// scripted model speaking one backend's wire format over HTTP.
type env struct {
	t    *testing.T
	st   *stack.Stack
	llm  *llmtest.Server
	cfg  *config.Config
	d    *daemon.Daemon
	fsys *client.Fsys
	cwd  string
	mnt  string // where the tree is mounted, "" if it is not
	n    int    // sessions made
}

func newEnv(t *testing.T, kind string, sc *llmtest.Script) *env {
	t.Helper()
	return newEnvMount(t, kind, sc, false)
}

// newEnvMount is newEnv with, when mounted is set, the tree mounted
// through FUSE and given to tools as $OLLIE, as `ollie serve -mount` does.
func newEnvMount(t *testing.T, kind string, sc *llmtest.Script, mounted bool) *env {
	t.Helper()
	st := stack.New(t, stack.Options{Kind: kind, Script: sc, Mount: mounted})
	return &env{t: t, st: st, llm: st.LLM, cfg: st.Cfg, d: st.D, fsys: st.Fsys, cwd: t.TempDir(), mnt: st.Mnt}
}

func (e *env) newSession(spec string) string {
	e.t.Helper()
	e.n++
	name := fmt.Sprintf("s%d-%s", e.n, strings.ReplaceAll(e.t.Name(), "/", "-"))
	if err := e.fsys.WriteFile(ctx, "s/new", []byte("cwd="+e.cwd+" name="+name+" "+spec), 0); err != nil {
		e.t.Fatal(err)
	}
	return name
}

func (e *env) write(p, data string) {
	e.t.Helper()
	if err := e.fsys.WriteFile(ctx, p, []byte(data), 0); err != nil {
		e.t.Fatalf("write %s: %v", p, err)
	}
}

func (e *env) read(p string) string {
	e.t.Helper()
	b, err := e.fsys.ReadFile(ctx, p)
	if err != nil {
		e.t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

// events reads what the events file holds now: its reads block at the
// end, so the read stops after a moment of silence.
func (e *env) events(s string) string {
	e.t.Helper()
	f, err := e.fsys.Open(ctx, "s/"+s+"/events", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Clunk(ctx)
	var all []byte
	buf := make([]byte, 64<<10)
	for {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		n, err := f.Read(rctx, buf, int64(len(all)))
		cancel()
		all = append(all, buf[:n]...)
		if err != nil {
			return string(all)
		}
	}
}

// ask runs one turn the way a user does: echo q > prompt; cat wait; cat reply.
func (e *env) ask(s, q string) (wait, reply string) {
	e.write("s/"+s+"/prompt", q+"\n")
	return e.read("s/" + s + "/wait"), e.read("s/" + s + "/reply")
}

func toolThenAnswer() *llmtest.Script {
	return &llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Let me look.", Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "echo hi from $((40+2))")}},
		{Text: "The tool said hi."},
	}}
}

func TestToolTurnEveryBackend(t *testing.T) {
	for _, kind := range []string{config.KindOpenAI, config.KindAnthropic, config.KindOllama} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, kind, toolThenAnswer())
			s := e.newSession("")
			wait, reply := e.ask(s, "say hi")
			if wait != "idle\n" || reply != "The tool said hi.\n" {
				t.Fatalf("wait %q reply %q\nchat:\n%s", wait, reply, e.read("s/"+s+"/chat"))
			}
			chat := e.read("s/" + s + "/chat")
			for _, want := range []string{"user: say hi\n", "assistant: Let me look.\n", "-> execute_code(", "hi from 42\n", "assistant: The tool said hi.\n"} {
				if !strings.Contains(chat, want) {
					t.Errorf("chat lacks %q:\n%s", want, chat)
				}
			}
			reqs := e.llm.Requests()
			var chats []llmtest.Request
			for _, r := range reqs {
				if len(r.Messages) > 0 {
					chats = append(chats, r)
				}
			}
			if len(chats) != 2 {
				t.Fatalf("%d chat requests, want 2", len(chats))
			}
			second := chats[1].Messages
			if last := second[len(second)-1]; last.Role != "tool" || !strings.Contains(last.Text, "hi from 42") {
				t.Errorf("second request ends with %+v, want the tool result", last)
			}
			if len(chats[0].Tools) != 1 || chats[0].Tools[0].Name != "execute_code" {
				t.Errorf("tools offered: %+v", chats[0].Tools)
			}
			if !strings.Contains(chats[0].System, "execute_code") {
				t.Errorf("system prompt sent: %q", chats[0].System)
			}
			if sp := e.read("s/" + s + "/systemprompt"); sp != chats[0].System {
				t.Errorf("systemprompt file differs from what was sent")
			}
			ctxLines := strings.Split(strings.TrimSpace(e.read("s/"+s+"/context")), "\n")
			if len(ctxLines) != 4 {
				t.Errorf("context has %d messages, want 4:\n%s", len(ctxLines), strings.Join(ctxLines, "\n"))
			}
			if u := e.read("s/" + s + "/usage"); !strings.Contains(u, "requests 2\n") {
				t.Errorf("usage = %q", u)
			}
			for _, k := range []string{"sk-test", "sk-ant-test"} {
				for _, f := range []string{"cfg", "env", "context", "systemprompt", "chat"} {
					if strings.Contains(e.read("s/"+s+"/"+f), k) {
						t.Errorf("key %s shows in %s", k, f)
					}
				}
				if strings.Contains(e.read("backends"), k) {
					t.Errorf("key shows in backends")
				}
			}
		})
	}
}

func TestRetriesAreVisible(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{
		{Status: 429, RetryAfter: 0},
		{Status: 503},
		{Text: "partial answer that gets cut", CutAfter: 3},
		{Text: "finally"},
	}})
	s := e.newSession("")
	wait, reply := e.ask(s, "hello")
	if wait != "idle\n" || reply != "finally\n" {
		t.Fatalf("wait %q reply %q\n%s", wait, reply, e.read("s/"+s+"/chat"))
	}
	chat := e.read("s/" + s + "/chat")
	if n := strings.Count(chat, "retrying in"); n != 3 {
		t.Errorf("%d retry lines in chat, want 3:\n%s", n, chat)
	}
	if ev := e.events(s); !strings.Contains(ev, `"state":"waiting"`) || strings.Count(ev, `"type":"retry"`) != 3 {
		t.Errorf("events lack the waiting state or retries:\n%s", ev)
	}
}

func TestGivesUpWithError(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Default: &llmtest.Turn{Status: 401}})
	s := e.newSession("")
	wait, _ := e.ask(s, "hello")
	if !strings.HasPrefix(wait, "error: ") {
		t.Fatalf("wait = %q, want an error", wait)
	}
	if st := e.read("s/" + s + "/state"); st != "error\n" {
		t.Errorf("state = %q", st)
	}
	if chat := e.read("s/" + s + "/chat"); strings.Contains(chat, "retrying") || !strings.Contains(chat, "error: ") {
		t.Errorf("a bad key was retried, or not reported:\n%s", chat)
	}
}

func TestStepLimitEndsWithSummary(t *testing.T) {
	sc := &llmtest.Script{Rules: []llmtest.Rule{
		{If: "used all 2 steps", Then: llmtest.Turn{Text: "Summary: I listed files twice."}},
	}, Default: &llmtest.Turn{Calls: []llmtest.Call{llmtest.ExecuteCode("sh", "ls")}}}
	sc.Rules[0].Role = "user"
	e := newEnv(t, config.KindOllama, sc)
	s := e.newSession("")
	e.write("s/"+s+"/cfg", "max_steps=2")
	wait, reply := e.ask(s, "loop forever")
	if wait != "idle\n" || reply != "Summary: I listed files twice.\n" {
		t.Fatalf("wait %q reply %q\n%s", wait, reply, e.read("s/"+s+"/chat"))
	}
	if n := strings.Count(e.read("s/"+s+"/chat"), "-> execute_code("); n != 2 {
		t.Errorf("%d tool calls ran, want 2", n)
	}
}

func TestStopLeavesValidHistory(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{
		Turns:   []llmtest.Turn{{Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "sleep 30")}}},
		Default: &llmtest.Turn{Text: "fresh start"},
	})
	s := e.newSession("")
	e.write("s/"+s+"/prompt", "run something slow\n")
	for e.read("s/"+s+"/state") != "calling execute_code\n" {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	e.write("s/"+s+"/ctl", "stop")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stop took %v", d)
	}
	if st := e.read("s/" + s + "/state"); st != "idle\n" {
		t.Fatalf("state after stop = %q", st)
	}
	wait, reply := e.ask(s, "again")
	if wait != "idle\n" || reply != "fresh start\n" {
		t.Fatalf("after stop: wait %q reply %q", wait, reply)
	}
	reqs := e.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	// user, assistant(call), tool(stopped), user
	if len(last) != 4 || last[2].Role != "tool" || !strings.Contains(last[2].Text, "stopped") {
		t.Errorf("history sent after a stop: %+v", last)
	}
}

func TestCompaction(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{
		Rules:   []llmtest.Rule{{If: "Summarize this conversation", Then: llmtest.Turn{Text: "- the user said things"}}},
		Default: &llmtest.Turn{Text: "noted"},
	})
	s := e.newSession("")
	for i := 0; i < 4; i++ {
		e.ask(s, "fact number "+strings.Repeat("x", i+1))
	}
	before := strings.Count(e.read("s/"+s+"/context"), "\n")
	e.write("s/"+s+"/ctl", "compact")
	if w := e.read("s/" + s + "/wait"); w != "idle\n" {
		t.Fatalf("wait after compact = %q\n%s", w, e.read("s/"+s+"/chat"))
	}
	after := e.read("s/" + s + "/context")
	if n := strings.Count(after, "\n"); n >= before {
		t.Errorf("context has %d messages after compaction, %d before", n, before)
	}
	if !strings.Contains(after, "the user said things") || !strings.Contains(after, "The current task: fact number xxxx") {
		t.Errorf("compacted context lacks the summary or the current task:\n%s", after)
	}
	if !strings.Contains(e.read("s/"+s+"/chat"), ":: compacted: summarized") {
		t.Errorf("chat does not say what was compacted")
	}
	hist, _ := filepath.Glob(filepath.Join(e.cfg.DataDir, "s", "*", "history", "*.jsonl"))
	if len(hist) != 1 {
		t.Fatalf("history files: %v", hist)
	}
	b, _ := os.ReadFile(hist[0])
	if strings.Count(string(b), "\n") != before {
		t.Errorf("the saved history is not the whole pre-compaction history")
	}
	// The next turn works on the compacted history.
	if _, reply := e.ask(s, "and now?"); reply != "noted\n" {
		t.Errorf("reply after compaction = %q", reply)
	}
}

func TestOverflowCompactsAndRetries(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{
		Rules: []llmtest.Rule{{If: "Summarize this conversation", Then: llmtest.Turn{Text: "- earlier: greetings"}}},
		Turns: []llmtest.Turn{{Text: "one"}, {Text: "two"}, {Overflow: true}, {Text: "after compaction"}},
	})
	s := e.newSession("")
	e.ask(s, "hello")
	e.ask(s, "again")
	wait, reply := e.ask(s, "overflow now")
	if wait != "idle\n" || reply != "after compaction\n" {
		t.Fatalf("wait %q reply %q\n%s", wait, reply, e.read("s/"+s+"/chat"))
	}
	if !strings.Contains(e.read("s/"+s+"/chat"), "context window is full; compacting") {
		t.Errorf("chat does not show the overflow")
	}
}

func TestUnknownToolAndBadArgs(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "web_search", Args: json.RawMessage(`{"q":"x"}`)},
			{Name: "execute_code", Args: json.RawMessage(`{"steps":[{"code":"x","language":"cobol-9000"}]}`)}}},
		{Text: "ok, giving up"},
	}})
	s := e.newSession("")
	if _, reply := e.ask(s, "try"); reply != "ok, giving up\n" {
		t.Fatalf("reply = %q", reply)
	}
	reqs := e.llm.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if !strings.Contains(msgs[2].Text, "unknown tool web_search") || !strings.Contains(msgs[3].Text, "cobol-9000") {
		t.Errorf("tool errors sent back: %q / %q", msgs[2].Text, msgs[3].Text)
	}
}

func TestPlanShownNotKept(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	s := e.newSession("")
	e.write("s/"+s+"/plan", "- [ ] write the tests\n")
	e.ask(s, "go on")
	reqs := e.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if !strings.Contains(last[len(last)-1].Text, "Your plan") || !strings.Contains(last[len(last)-1].Text, "write the tests") {
		t.Errorf("the plan was not shown: %q", last[len(last)-1].Text)
	}
	if strings.Contains(e.read("s/"+s+"/context"), "write the tests") {
		t.Error("the plan entered the history")
	}
}

func TestSystemPromptComposition(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	os.WriteFile(filepath.Join(e.cfg.ConfigDir, "p", "role.md"), []byte("You work in {{cwd}} as session {{name}}.\n"), 0644)
	os.WriteFile(filepath.Join(e.cfg.ConfigDir, "x", "prime"), []byte("#!/bin/sh\necho \"primed for $1\"\n"), 0755)
	e.write("a/composed.json", `{"prompt": [{"file": "role.md"}, {"exec": "x/prime {{agent}}"}]}`)
	s := e.newSession("agent=composed")
	e.ask(s, "hello")
	sp := e.read("s/" + s + "/systemprompt")
	want := "You work in " + e.cwd + " as session " + s + ".\n\nprimed for composed\n"
	if sp != want {
		t.Errorf("systemprompt = %q, want %q", sp, want)
	}
	reqs := e.llm.Requests()
	if reqs[len(reqs)-1].System != sp {
		t.Errorf("sent %q, file says %q", reqs[len(reqs)-1].System, sp)
	}
	// The agent can read p/ through the tree but never change it.
	if err := e.fsys.WriteFile(ctx, "p/role.md", []byte("hijacked"), 0); err == nil {
		t.Error("p/ is writable through the tree")
	}
	e.write("a/bad.json", `{"prompt": [{"exec": "/bin/sh -c id"}]}`)
	s2 := e.newSession("agent=bad")
	if wait, _ := e.ask(s2, "hello"); !strings.Contains(wait, "only plugins in x/") {
		t.Errorf("an exec part outside x/ ran: wait %q", wait)
	}
}

func TestFencedFallback(t *testing.T) {
	e := newEnv(t, config.KindOllama, &llmtest.Script{Turns: []llmtest.Turn{
		{Status: 400, Raw: `{"error":"registry.ollama.ai/library/tiny:latest does not support tools"}`},
		{Text: "Let me check.\n\n```execute_code bash\necho fenced $((6*7))\n```\n"},
		{Text: "It printed 42."},
	}})
	s := e.newSession("")
	wait, reply := e.ask(s, "compute")
	if wait != "idle\n" || reply != "It printed 42.\n" {
		t.Fatalf("wait %q reply %q\n%s", wait, reply, e.read("s/"+s+"/chat"))
	}
	reqs := e.llm.Requests()
	var chats []llmtest.Request
	for _, r := range reqs {
		if len(r.Messages) > 0 {
			chats = append(chats, r)
		}
	}
	last := chats[len(chats)-1]
	if len(last.Tools) != 0 || !strings.Contains(last.System, "execute_code") {
		t.Errorf("fenced request: %d tools, system %q", len(last.Tools), last.System)
	}
	if m := last.Messages[len(last.Messages)-1]; m.Role != "user" || !strings.Contains(m.Text, "fenced 42") {
		t.Errorf("the fenced call's output went back as %+v", m)
	}
	if !strings.Contains(e.read("s/"+s+"/chat"), "cannot call tools natively") {
		t.Error("the switch is not shown in chat")
	}
}

func TestSpendingCapAndCost(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Default: &llmtest.Turn{Text: "pricey",
		Usage: &llmtest.Usage{Input: 200000, Output: 100000}}})
	e.write("a/capped.json", `{"spend_limit_usd": 1, "model": "claude-sonnet-4-5"}`)
	s := e.newSession("agent=capped")
	if wait, _ := e.ask(s, "one"); wait != "idle\n" {
		t.Fatalf("first turn: %q", wait)
	}
	// 200k input at $3/M + 100k output at $15/M = $2.10.
	if c := e.read("s/" + s + "/cost"); !strings.Contains(c, "turn 2.100000\n") || !strings.Contains(c, "session 2.100000\n") {
		t.Errorf("cost = %q", c)
	}
	wait, _ := e.ask(s, "two")
	if !strings.Contains(wait, "spending cap reached") {
		t.Errorf("over the cap: wait = %q", wait)
	}
	if u := e.read("s/" + s + "/usage"); !strings.Contains(u, "requests 1\n") {
		t.Errorf("a request was made over the cap: %q", u)
	}
}

func TestModelsAndSwitching(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{
		Models:  []llmtest.Model{{ID: "alpha"}, {ID: "beta"}},
		Default: &llmtest.Turn{Text: "ok"},
	})
	s := e.newSession("")
	if m := e.read("s/" + s + "/models"); m != "alpha\nbeta\n" {
		t.Errorf("models = %q", m)
	}
	e.ask(s, "first")
	e.write("s/"+s+"/ctl", "model beta")
	e.ask(s, "second")
	reqs := e.llm.Requests()
	var models []string
	for _, r := range reqs {
		if len(r.Messages) > 0 {
			models = append(models, r.Model)
		}
	}
	if len(models) != 2 || models[0] != "alpha" || models[1] != "beta" {
		t.Errorf("models used: %v, want the first listed, then the one switched to", models)
	}
	if c := e.read("s/" + s + "/cfg"); !strings.Contains(c, "model=beta\n") {
		t.Errorf("cfg = %q", c)
	}
}

func TestElevatedStageAsks(t *testing.T) {
	call := func(code string) llmtest.Call {
		return llmtest.Call{Name: "execute_code", Args: json.RawMessage(`{"steps":[{"language":"sh","code":"` + code + `","elevated":true}]}`)}
	}
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{call("cat /etc/hostname >/dev/null && echo outside")}}, {Text: "one"},
		{Calls: []llmtest.Call{call("echo should not run")}}, {Text: "two"},
	}})
	s := e.newSession("")
	for _, answer := range []string{"allow", "deny"} {
		e.write("s/"+s+"/prompt", "go\n")
		var ents []string
		for len(ents) == 0 {
			ds, err := e.fsys.ReadDir(ctx, "s/"+s+"/ask")
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				ents = append(ents, d.Name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if st := e.read("s/" + s + "/state"); st != "asking\n" {
			t.Errorf("state while asking = %q", st)
		}
		req := e.read("s/" + s + "/ask/" + ents[0])
		if !strings.Contains(req, "outside the sandbox") || !strings.Contains(req, "write allow or deny") {
			t.Errorf("request file: %q", req)
		}
		if err := e.fsys.WriteFile(ctx, "s/"+s+"/ask/"+ents[0], []byte("maybe\n"), 0); err == nil {
			t.Error("a bad answer was accepted")
		}
		e.write("s/"+s+"/ask/"+ents[0], answer+"\n")
		e.read("s/" + s + "/wait")
	}
	reqs := e.llm.Requests()
	var results []string
	for _, r := range reqs {
		if m := r.Messages; len(m) > 0 && m[len(m)-1].Role == "tool" {
			results = append(results, m[len(m)-1].Text)
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], "outside") || strings.Contains(results[1], "should not run") {
		t.Errorf("results: %q", results)
	}
	if ds, _ := e.fsys.ReadDir(ctx, "s/"+s+"/ask"); len(ds) != 0 {
		t.Errorf("answered requests still listed: %d", len(ds))
	}
}

// backends says how each backend's last request went, learned from the
// turns (reading it asks no backend anything).
func TestBackendsLastRequest(t *testing.T) {
	e := newEnv(t, config.KindOllama, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `^fail`, Then: llmtest.Turn{Status: 401}},
	}, Default: &llmtest.Turn{Text: "hi"}})
	if b := e.read("backends"); !strings.HasSuffix(strings.TrimSpace(b), " -") {
		t.Fatalf("before any turn, backends = %q", b)
	}
	s := e.newSession("")
	e.ask(s, "hello")
	if b := e.read("backends"); !strings.Contains(b, " ok(") {
		t.Errorf("after a turn, backends = %q", b)
	}
	e.ask(s, "fail now")
	if b := e.read("backends"); !strings.Contains(b, " failed(") {
		t.Errorf("after a failed request, backends = %q", b)
	}
}

// s/idx shows each session's name, and the backend and model it uses
// though none was set: here the backend's configured model.
func TestIdxShowsNameAndModelInUse(t *testing.T) {
	e := newEnv(t, config.KindOllama, &llmtest.Script{})
	e.write("a/pinned.json", `{"prompt": [{"file": "base.md"}], "model": "pinned-model"}`)
	s := e.newSession("agent=pinned")
	var line string
	for _, l := range strings.Split(e.read("s/idx"), "\n") {
		if strings.HasSuffix(l, "\t"+s) {
			line = l
		}
	}
	f := strings.Split(line, "\t")
	if len(f) != 7 || f[2] != "pinned" || f[3] != "ollama" || f[4] != "pinned-model" || f[5] != e.cwd {
		t.Fatalf("idx line %q: want agent pinned, backend ollama, model pinned-model, cwd, name", line)
	}
}

// TestSystemPromptBeforeTheFirstTurn: a new session's systemprompt is
// true before its first turn, its stat included (the prompt is kept in
// memory, not written at creation), and the file on disk is what the
// turn sent.
func TestSystemPromptBeforeTheFirstTurn(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	os.WriteFile(filepath.Join(e.cfg.ConfigDir, "p", "role.md"), []byte("You are {{name}} in {{cwd}}.\n"), 0644)
	e.write("a/role.json", `{"prompt": [{"file": "role.md"}]}`)
	s := e.newSession("agent=role")
	want := "You are " + s + " in " + e.cwd + ".\n"
	st, err := e.fsys.Stat(ctx, "s/"+s+"/systemprompt")
	if err != nil {
		t.Fatal(err)
	}
	if sp := e.read("s/" + s + "/systemprompt"); sp != want || st.Length != uint64(len(want)) {
		t.Fatalf("before the first turn: systemprompt %q of stat size %d, want %q of size %d", sp, st.Length, want, len(want))
	}
	// The files written: a session made from a spare directory has the
	// spare's empty file, and the glob takes in the spares' (empty) too.
	written := func() (out []string) {
		ps, _ := filepath.Glob(filepath.Join(e.cfg.DataDir, "s", "*", "systemprompt"))
		for _, p := range ps {
			if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
				out = append(out, p)
			}
		}
		return out
	}
	if onDisk := written(); len(onDisk) != 0 {
		t.Errorf("creating a session wrote %v", onDisk)
	}
	// A change of settings is shown at once, its stat too.
	e.write("s/"+s+"/cfg", "cwd="+t.TempDir()+"\n")
	st2, _ := e.fsys.Stat(ctx, "s/"+s+"/systemprompt")
	sp := e.read("s/" + s + "/systemprompt")
	if sp == want || st2.Length != uint64(len(sp)) || st2.Qid.Vers == st.Qid.Vers {
		t.Errorf("after cwd changed: %q (stat size %d, version %d, was %d)", sp, st2.Length, st2.Qid.Vers, st.Qid.Vers)
	}
	e.ask(s, "hello")
	reqs := e.llm.Requests()
	sent := reqs[len(reqs)-1].System
	onDisk := written()
	if len(onDisk) != 1 {
		t.Fatalf("after a turn, on disk: %v", onDisk)
	}
	if b, _ := os.ReadFile(onDisk[0]); string(b) != sent || sent != sp {
		t.Errorf("the file holds %q; the turn sent %q; the tree showed %q", b, sent, sp)
	}
}

// The sandbox of a session's tools is prepared while its first request
// is with the model: the ruleset of its policy is built before the model
// has answered with the call, and the call reuses it.
func TestFirstCallsSandboxPreparedWhileTheModelAnswers(t *testing.T) {
	sc := toolThenAnswer()
	sc.Latency = llmtest.Duration(50 * time.Millisecond) // half a second or more for the first response
	e := newEnv(t, "openai", sc)
	s := e.newSession("")
	before := sandbox.Built()
	e.write("s/"+s+"/prompt", "look\n")
	deadline := time.Now().Add(10 * time.Second)
	for sandbox.Built() == before {
		if time.Now().After(deadline) {
			t.Fatal("no ruleset built for the session")
		}
		time.Sleep(time.Millisecond)
	}
	if chat := e.read("s/" + s + "/chat"); strings.Contains(chat, "execute_code") {
		t.Fatalf("the ruleset was built only once the model had called the tool:\n%s", chat)
	}
	if w := e.read("s/" + s + "/wait"); !strings.HasPrefix(w, "idle") {
		t.Fatalf("wait: %q", w)
	}
	if !strings.Contains(e.read("s/"+s+"/chat"), "hi from 42") {
		t.Fatalf("the tool did not run:\n%s", e.read("s/"+s+"/chat"))
	}
	if n := sandbox.Built() - before; n != 1 {
		t.Errorf("%d rulesets built for one session's first call, want 1 (reused by the call)", n)
	}
}

// An agent's configuration is read again as soon as it changes: written
// through the tree, written on disk in place or by a rename (as editors
// do), or where a link in a/ points.
func TestAgentChangesSeenAtOnce(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	pdir := filepath.Join(e.cfg.ConfigDir, "p")
	for _, part := range []string{"one", "two", "three", "four", "five"} {
		os.WriteFile(filepath.Join(pdir, part+".md"), []byte("part "+part+"\n"), 0644)
	}
	agent := func(part string) string { return `{"prompt": [{"file": "` + part + `.md"}]}` }
	check := func(s, want string) {
		t.Helper()
		e.ask(s, "hello")
		if sp := e.read("s/" + s + "/systemprompt"); sp != "part "+want+"\n" {
			t.Errorf("systemprompt %q, want part %s", sp, want)
		}
	}
	e.write("a/moody.json", agent("one"))
	s := e.newSession("agent=moody")
	check(s, "one")
	e.write("a/moody.json", agent("two"))
	check(s, "two")
	path := filepath.Join(e.cfg.ConfigDir, "a", "moody.json")
	if err := os.WriteFile(path, []byte(agent("three")), 0644); err != nil {
		t.Fatal(err)
	}
	check(s, "three")
	if err := os.WriteFile(path+".tmp", []byte(agent("four")), 0644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	check(s, "four")
	// A link to a file elsewhere: its changes make no event in a/.
	outside := filepath.Join(t.TempDir(), "moody.json")
	os.WriteFile(outside, []byte(agent("one")), 0644)
	os.Remove(path)
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	check(s, "one")
	os.WriteFile(outside, []byte(agent("five")), 0644)
	check(s, "five")
}

// A new session's agent is checked against a/ as it is at the write to
// s/new, though the check reads the configuration the turns keep.
func TestNewSessionChecksTheAgentAsItIsNow(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	path := filepath.Join(e.cfg.ConfigDir, "a", "fickle.json")
	try := func(want string) {
		t.Helper()
		err := e.fsys.WriteFile(ctx, "s/new", []byte("cwd="+e.cwd+" agent=fickle\n"), 0)
		switch {
		case want == "" && err != nil:
			t.Fatalf("s/new agent=fickle: %v", err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Fatalf("s/new agent=fickle: %v, want an error with %q", err, want)
		}
	}
	try("no agent fickle (no a/fickle.json)")
	e.write("a/fickle.json", `{"prompt": [{"file": "base.md"}]}`)
	try("")
	if err := os.WriteFile(path, []byte(`{"prompt": [`), 0644); err != nil {
		t.Fatal(err)
	}
	try("a/fickle.json:")
	if err := os.WriteFile(path, []byte(`{}`), 0644); err != nil {
		t.Fatal(err)
	}
	try("")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	try("no agent fickle")
	for _, bad := range []string{"../a/default", "a/../default", "nosuch"} {
		err := e.fsys.WriteFile(ctx, "s/new", []byte("cwd="+e.cwd+" agent="+bad+"\n"), 0)
		if err == nil {
			t.Errorf("s/new agent=%q: made a session", bad)
		}
	}
}

// A prompt part of p/ is kept between turns while p/ is unchanged; every
// change is in the next system prompt: written in place, replaced by a
// rename, a link to a file elsewhere.
func TestPromptPartChangesSeenAtOnce(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	pdir := filepath.Join(e.cfg.ConfigDir, "p")
	write := func(p, text string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(text), 0644); err != nil {
			t.Fatal(err)
		}
	}
	path, deep := filepath.Join(pdir, "part.md"), filepath.Join(pdir, "deep.md")
	write(path, "one\n\n")
	write(deep, "deep one\n")
	e.write("a/parts.json", `{"prompt": [{"file": "part.md"}, {"file": "deep.md"}]}`)
	s := e.newSession("agent=parts")
	check := func(want string) {
		t.Helper()
		e.ask(s, "hello")
		if sp := e.read("s/" + s + "/systemprompt"); sp != want {
			t.Errorf("systemprompt %q, want %q", sp, want)
		}
	}
	check("one\n\ndeep one\n")
	write(path, "two\n\n")
	check("two\n\ndeep one\n")
	write(path+".tmp", "three\n\n")
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	check("three\n\ndeep one\n")
	write(deep, "deep two\n")
	check("three\n\ndeep two\n")
	outside := filepath.Join(t.TempDir(), "part.md")
	write(outside, "four\n\n")
	os.Remove(path)
	if err := os.Symlink(outside, path); err != nil {
		t.Fatal(err)
	}
	check("four\n\ndeep two\n")
	write(outside, "five\n\n")
	check("five\n\ndeep two\n")
}
