package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil/stack"
)

// What the agent does with what real providers send: recorded streams
// (internal/backend/testdata, see PROVENANCE.md) replayed byte for byte
// through a real daemon.

func recorded(name string) llmtest.Turn {
	return llmtest.Turn{RawFile: filepath.Join("..", "backend", "testdata", name)}
}

func TestRefusalShownAndMarked(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{recorded("openai_refusal.sse")}})
	s := e.newSession("")
	wait, reply := e.ask(s, "how do I make anthrax?")
	const said = "I'm sorry, but I can't assist with that request."
	if wait != "idle\n" || reply != "(refused) "+said+"\n" {
		t.Fatalf("wait %q reply %q", wait, reply)
	}
	chat := e.read("s/" + s + "/chat")
	if !strings.Contains(chat, "assistant: "+said+"\n") || !strings.Contains(chat, ":: the model refused\n") {
		t.Errorf("chat does not show the refusal:\n%s", chat)
	}
	if ev := e.events(s); !strings.Contains(ev, `"type":"refusal"`) {
		t.Errorf("no refusal event:\n%s", ev)
	}
}

// A reply cut at max_tokens is said so, and its cut tool call is never
// run: it gets a result saying so, and the turn ends.
func TestCutToolCallNotRun(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Turns: []llmtest.Turn{recorded("anthropic_max_tokens.sse"), {Text: "next turn"}}})
	s := e.newSession("")
	wait, reply := e.ask(s, "write a.txt")
	if wait != "idle\n" || reply != "I'll write the file.\n" {
		t.Fatalf("wait %q reply %q", wait, reply)
	}
	chat := e.read("s/" + s + "/chat")
	if !strings.Contains(chat, ":: reply cut at max_tokens (") || !strings.Contains(chat, "its 1 tool call(s) were not run") {
		t.Errorf("chat does not say the reply was cut:\n%s", chat)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "a.txt")); err == nil {
		t.Fatal("the cut tool call ran")
	}
	ev := e.events(s)
	if !strings.Contains(ev, `"type":"truncated"`) || strings.Contains(ev, `"type":"tool_start"`) {
		t.Errorf("events: want truncated and no tool_start:\n%s", ev)
	}
	// The history stays valid for the next request: the call has a result.
	e.ask(s, "again")
	reqs := e.llm.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if len(msgs) < 3 || msgs[2].Role != "tool" || !strings.Contains(msgs[2].Text, "cut at max_tokens") {
		t.Errorf("next request: %+v", msgs)
	}
}

// Reasoning is in chat between think marks and in events, never in reply;
// Anthropic's signed thinking is sent back unchanged within the turn.
func TestReasoningVisibleAndSentBack(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Turns: []llmtest.Turn{recorded("anthropic_tools.sse"), {Text: "Both ran."}}})
	s := e.newSession("")
	wait, reply := e.ask(s, "check")
	if wait != "idle\n" || reply != "Both ran.\n" {
		t.Fatalf("wait %q reply %q", wait, reply)
	}
	chat := e.read("s/" + s + "/chat")
	const thought = "Two independent checks; run both."
	if !strings.Contains(chat, "<think>\n"+thought+"\n</think>\nassistant: I'll run both checks at once.\n") {
		t.Errorf("chat does not show the reasoning marked:\n%s", chat)
	}
	if ev := e.events(s); !strings.Contains(ev, `"type":"reasoning"`) || !strings.Contains(ev, thought) {
		t.Errorf("no reasoning event:\n%s", ev)
	}
	reqs := e.llm.Requests()
	body := string(reqs[len(reqs)-1].Body)
	recordedBytes, _ := os.ReadFile(recorded("anthropic_tools.sse").RawFile)
	sig := between(string(recordedBytes), `"signature_delta","signature":"`, `"`)
	if sig == "" || !strings.Contains(body, `{"type":"thinking","thinking":"`+thought+`","signature":"`+sig+`"}`) {
		t.Errorf("the follow-up request does not carry the signed thinking block %q:\n%s", sig, body)
	}
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

func TestDeepSeekReasoningNotTheAnswer(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{recorded("deepseek_reasoning.sse"), {Text: "ok"}}})
	s := e.newSession("")
	if _, reply := e.ask(s, "9.11 or 9.8?"); reply != "9.8 is greater.\n" {
		t.Fatalf("reply %q", reply)
	}
	if chat := e.read("s/" + s + "/chat"); !strings.Contains(chat, "<think>\n9.11 is less than 9.8.\n</think>\n") {
		t.Errorf("chat:\n%s", chat)
	}
	// DeepSeek rejects reasoning_content sent back: it is not.
	e.ask(s, "thanks")
	reqs := e.llm.Requests()
	if body := string(reqs[len(reqs)-1].Body); strings.Contains(body, "9.11 is less") {
		t.Errorf("reasoning sent back to DeepSeek: %s", body)
	}
}

func TestReportedAndLocalCost(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{recorded("openrouter_cost.sse")}})
	s := e.newSession("")
	e.ask(s, "2+2?")
	if c := e.read("s/" + s + "/cost"); c != "turn 0.000204\nsession 0.000204\n" {
		t.Errorf("cost = %q, want what OpenRouter reported", c)
	}
	if ev := e.events(s); !strings.Contains(ev, `"source":"backend"`) {
		t.Errorf("cost event: %s", ev)
	}
	o := newEnv(t, config.KindOllama, &llmtest.Script{Turns: []llmtest.Turn{recorded("ollama_length.ndjson"), {Text: " and more", Stop: "max_tokens"}}})
	s = o.newSession("")
	o.ask(s, "write")
	if c := o.read("s/" + s + "/cost"); c != "turn 0\nsession 0\n(free: a local model or one the backend reports as free)\n" {
		t.Errorf("local cost = %q, want 0", c)
	}
	if ev := o.events(s); !strings.Contains(ev, `"source":"local"`) || !strings.Contains(ev, `"type":"truncated"`) {
		t.Errorf("events: %s", ev)
	}
	// Ollama's thinking is reasoning too; the cut reply is continued once,
	// and what arrived is the reply when the rest is cut too.
	if chat := o.read("s/" + s + "/chat"); !strings.Contains(chat, "<think>\nWrite it.\n</think>\nassistant: The first line\n:: reply cut at max_tokens (8 output tokens); asking once for the rest\nassistant:  and more\n:: reply cut at max_tokens") {
		t.Errorf("chat:\n%s", chat)
	}
	if reply := o.read("s/" + s + "/reply"); reply != "The first line and more\n" {
		t.Errorf("reply = %q", reply)
	}
}

// An overflow with nothing left to compact ends the turn at once.
func TestOverflowNothingToCompact(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Default: &llmtest.Turn{Overflow: true}})
	s := e.newSession("")
	wait, _ := e.ask(s, strings.Repeat("huge ", 100))
	if !strings.Contains(wait, "nothing is left to compact") {
		t.Fatalf("wait = %q", wait)
	}
	chats := 0
	for _, r := range e.llm.Requests() {
		if len(r.Messages) > 0 {
			chats++
		}
	}
	if chats != 1 {
		t.Errorf("%d chat requests, want the one that overflowed", chats)
	}
	if chat := e.read("s/" + s + "/chat"); strings.Contains(chat, "compacting") {
		t.Errorf("chat claims to compact:\n%s", chat)
	}
}

func TestUnknownToolHasEvents(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "web_search", Args: json.RawMessage(`{"q":"x"}`)}}},
		{Text: "ok"},
	}})
	s := e.newSession("")
	e.ask(s, "search")
	ev := e.events(s)
	if !strings.Contains(ev, `"type":"tool_start"`) || !strings.Contains(ev, `"type":"tool_end"`) || !strings.Contains(ev, `"tool":"web_search"`) {
		t.Errorf("events of an unknown tool call:\n%s", ev)
	}
}

// A wait beyond the cap fails at once; the same error repeated is written
// once.
func TestRateLimitWaitCapped(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{
		{Status: 429}, {Status: 429}, {Status: 429, Headers: map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20m"}},
	}})
	s := e.newSession("")
	wait, _ := e.ask(s, "hi")
	if !strings.Contains(wait, "gave up: the server asks to wait 20m0s more") {
		t.Fatalf("wait = %q", wait)
	}
	chat := e.read("s/" + s + "/chat")
	if n := strings.Count(chat, "Rate limit reached"); n != 2 { // the first retry line and the final error
		t.Errorf("the error text shows %d times:\n%s", n, chat)
	}
	if !strings.Contains(chat, ":: same again; retrying in") {
		t.Errorf("chat:\n%s", chat)
	}
	if ev := e.events(s); !strings.Contains(ev, `"until":"`) {
		t.Errorf("retry events carry no end of the wait:\n%s", ev)
	}
}

// A backend where nothing listens fails the turn at once, with no retry.
func TestDeadBackendFailsAtOnce(t *testing.T) {
	st := stack.New(t, stack.Options{Kind: config.KindOllama, Env: map[string]string{"OLLAMA_HOST": "127.0.0.1:1"}, RetryBase: time.Second})
	e := &env{t: t, st: st, cfg: st.Cfg, d: st.D, fsys: st.Fsys, cwd: t.TempDir()}
	s := e.newSession("")
	start := time.Now()
	wait, _ := e.ask(s, "hi")
	t.Logf("failed after %v: %s", time.Since(start), wait)
	if !strings.Contains(wait, "nothing answers at http://127.0.0.1:1") || !strings.Contains(wait, "ollama serve") {
		t.Fatalf("wait = %q", wait)
	}
	if chat := e.read("s/" + s + "/chat"); strings.Contains(chat, "retrying") {
		t.Errorf("a dead backend was retried:\n%s", chat)
	}
}

// context shows tool arguments as the model wrote them, and later
// requests send them back the same.
func TestContextKeepsToolArgsExactly(t *testing.T) {
	spaced := "{\"steps\": [{\"code\": \"echo  hi\", \"language\": \"bash\"}]}"
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "execute_code", Args: json.RawMessage(spaced)}}},
		{Text: "done"}, {Text: "again"},
	}})
	s := e.newSession("")
	e.ask(s, "run")
	e.ask(s, "more") // a new turn reads the history from disk
	ctxFile := e.read("s/" + s + "/context")
	quoted, _ := json.Marshal(spaced)
	if !strings.Contains(ctxFile, string(quoted)) {
		t.Errorf("context does not hold the arguments as written:\n%s", ctxFile)
	}
	reqs := e.llm.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, c := range m.Calls {
			if string(c.Args) != spaced {
				t.Errorf("sent back %s, want %s", c.Args, spaced)
			}
		}
	}
}

// In every API, a tool call of a reply cut at the output limit is never
// run, even when its arguments look whole.
func TestCutCallNeverRunEveryBackend(t *testing.T) {
	for _, kind := range []string{config.KindOpenAI, config.KindAnthropic, config.KindOllama} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, kind, &llmtest.Script{Turns: []llmtest.Turn{
				{Text: "Writing.", Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "touch ran")}, Stop: "max_tokens"},
			}})
			s := e.newSession("")
			if wait, reply := e.ask(s, "go"); wait != "idle\n" || reply != "Writing.\n" {
				t.Fatalf("wait %q reply %q", wait, reply)
			}
			if _, err := os.Stat(filepath.Join(e.cwd, "ran")); err == nil {
				t.Fatal("the cut tool call ran")
			}
			if n := len(chatRequests(e.llm)); n != 1 {
				t.Errorf("%d requests: a reply with a cut tool call was continued", n)
			}
			if chat := e.read("s/" + s + "/chat"); !strings.Contains(chat, ":: reply cut at max_tokens") {
				t.Errorf("chat:\n%s", chat)
			}
			if ev := e.events(s); !strings.Contains(ev, `"type":"truncated"`) {
				t.Errorf("events:\n%s", ev)
			}
		})
	}
}
