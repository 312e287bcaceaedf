package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/agent"
	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// One contract test per backend: each item of what a provider's stream
// can hold (docs/backends.md) that its API has, through a real daemon, on
// the streams of internal/backend/testdata (recorded, or written after a
// recording: see PROVENANCE.md) replayed byte for byte.

// contractCase is one item: the turns the model answers with, the agent
// configuration, and what chat, reply, events and the requests must show.
type contractCase struct {
	name  string
	agent string // a/contract.json; "" for the default agent
	turns []llmtest.Turn
	check func(t *testing.T, r contractRun)
}

type contractRun struct {
	wait, reply, chat, events string
	reqs                      []llmtest.Request // chat requests, in order
	cwd                       string
}

func runContract(t *testing.T, kind string, cases []contractCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, kind, &llmtest.Script{Turns: c.turns})
			spec := ""
			if c.agent != "" {
				e.write("a/contract.json", c.agent)
				spec = "agent=contract"
			}
			s := e.newSession(spec)
			wait, reply := e.ask(s, "go")
			c.check(t, contractRun{wait: wait, reply: reply, chat: e.read("s/" + s + "/chat"),
				events: e.events(s), reqs: chatRequests(e.llm), cwd: e.cwd})
		})
	}
}

func (r contractRun) has(t *testing.T, where, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", where, w, text)
		}
	}
}

// lastBody is the body of the last chat request.
func (r contractRun) lastBody() []byte { return r.reqs[len(r.reqs)-1].Body }

// Checks every backend shares.

func refused(text string) func(*testing.T, contractRun) {
	return func(t *testing.T, r contractRun) {
		if r.reply != "(refused) "+text+"\n" {
			t.Errorf("reply %q", r.reply)
		}
		r.has(t, "chat", r.chat, "assistant: "+text+"\n", ":: the model refused\n")
		r.has(t, "events", r.events, `"type":"refusal"`)
	}
}

func continuedThenCut(first string) func(*testing.T, contractRun) {
	return func(t *testing.T, r contractRun) {
		if r.reply != first+" and more\n" || len(r.reqs) != 2 {
			t.Errorf("reply %q after %d requests", r.reply, len(r.reqs))
		}
		r.has(t, "chat", r.chat, "asking once for the rest\n", ":: reply cut at max_tokens (")
		r.has(t, "events", r.events, `"type":"continued"`, `"type":"truncated"`)
	}
}

func cutCallNotRun(t *testing.T, r contractRun) {
	if _, err := os.Stat(filepath.Join(r.cwd, "ran")); err == nil {
		t.Error("the cut tool call ran")
	}
	if len(r.reqs) != 1 {
		t.Errorf("%d requests: a reply with a cut call was continued", len(r.reqs))
	}
	r.has(t, "chat", r.chat, "tool call(s) were not run")
	if strings.Contains(r.events, `"type":"tool_start"`) {
		t.Errorf("events: a cut call started:\n%s", r.events)
	}
}

func reasoned(thought, answer string) func(*testing.T, contractRun) {
	return func(t *testing.T, r contractRun) {
		if r.reply != answer+"\n" || strings.Contains(r.reply, thought) {
			t.Errorf("reply %q", r.reply)
		}
		r.has(t, "chat", r.chat, "<think>\n"+thought+"\n</think>\nassistant: "+answer)
		r.has(t, "events", r.events, `"type":"reasoning"`)
	}
}

func ranCalls(n int) func(*testing.T, contractRun) {
	return func(t *testing.T, r contractRun) {
		if got := strings.Count(r.events, `"type":"tool_end"`); got != n {
			t.Errorf("%d calls ran, want %d:\n%s", got, n, r.events)
		}
		if r.wait != "idle\n" {
			t.Errorf("wait %q", r.wait)
		}
	}
}

func costFrom(source, cost string) func(*testing.T, contractRun) {
	return func(t *testing.T, r contractRun) {
		r.has(t, "events", r.events, `"source":"`+source+`"`)
		if cost != "" {
			r.has(t, "events", r.events, `"usd":`+cost)
		}
	}
}

func gaveUp(t *testing.T, r contractRun) {
	if !strings.Contains(r.wait, "gave up: the server asks to wait") {
		t.Errorf("wait %q", r.wait)
	}
	if len(r.reqs) != 1 {
		t.Errorf("%d requests; a wait beyond the cap is not waited", len(r.reqs))
	}
}

func sentPath(path, want string) func(*testing.T, contractRun) {
	return func(t *testing.T, r contractRun) {
		if got := gjson.GetBytes(r.reqs[0].Body, path).Raw; got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
}

func at(name string) llmtest.Turn { return recorded(name) }

var cutCall = llmtest.Turn{Text: "Writing.", Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "touch ran")}, Stop: "max_tokens"}

func TestContractOpenAI(t *testing.T) {
	runContract(t, config.KindOpenAI, []contractCase{
		{name: "refusal", turns: []llmtest.Turn{at("openai_refusal.sse")}, check: refused("I'm sorry, but I can't assist with that request.")},
		{name: "length continued once", turns: []llmtest.Turn{at("openai_length.sse"), {Text: " and more", Stop: "max_tokens"}}, check: continuedThenCut(`{"`)},
		{name: "cut call never runs", turns: []llmtest.Turn{cutCall}, check: cutCallNotRun},
		{name: "reasoning_content", turns: []llmtest.Turn{at("deepseek_reasoning.sse")}, check: reasoned("9.11 is less than 9.8.", "9.8 is greater.")},
		{name: "reasoning and usage.cost", turns: []llmtest.Turn{at("openrouter_cost.sse")}, check: func(t *testing.T, r contractRun) {
			reasoned("The user asks for 2+2. Simple.", "2 + 2 = 4.")(t, r)
			costFrom("backend", "0.00020436")(t, r)
		}},
		{name: "parallel tool calls", turns: []llmtest.Turn{at("openai_tools.sse"), {Text: "ok"}}, check: ranCalls(2)},
		{name: "reasoning in a tool-use turn", turns: []llmtest.Turn{at("deepseek_tool_reasoning.sse"), {Text: "ok"}}, check: ranCalls(1)},
		{name: "reasoning setting", agent: `{"reasoning": "medium"}`, turns: []llmtest.Turn{{Text: "ok"}}, check: sentPath("reasoning_effort", `"medium"`)},
		{name: "reset headers", turns: []llmtest.Turn{{Status: 429, Headers: map[string]string{
			"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20m"}}}, check: gaveUp},
	})
}

func TestContractAnthropic(t *testing.T) {
	runContract(t, config.KindAnthropic, []contractCase{
		{name: "refusal without content", turns: []llmtest.Turn{at("anthropic_refusal_details.sse")}, check: refused("This request was blocked under the usage policy.")},
		{name: "max_tokens inside a tool call", turns: []llmtest.Turn{at("anthropic_max_tokens.sse")}, check: func(t *testing.T, r contractRun) {
			if len(r.reqs) != 1 || r.reply != "I'll write the file.\n" {
				t.Errorf("reply %q after %d requests", r.reply, len(r.reqs))
			}
			r.has(t, "chat", r.chat, "its 1 tool call(s) were not run")
		}},
		{name: "text cut continued by prefill", turns: []llmtest.Turn{{Text: "First", Stop: "max_tokens"}, {Text: " and more", Stop: "max_tokens"}}, check: func(t *testing.T, r contractRun) {
			continuedThenCut("First")(t, r)
			if last := gjson.GetBytes(r.lastBody(), "messages.@reverse.0"); last.Get("role").Str != "assistant" || last.Get("content.0.text").Str != "First" {
				t.Errorf("the continuation does not end with the prefill: %s", last.Raw)
			}
		}},
		{name: "signed thinking", turns: []llmtest.Turn{at("anthropic_thinking_spaced.sse")}, check: reasoned("Sum the digits of 1234: 10.", "The digits of 1234 sum to **10**.")},
		{name: "signed thinking sent back in a tool-use turn", turns: []llmtest.Turn{at("anthropic_tools.sse"), {Text: "Both ran."}}, check: func(t *testing.T, r contractRun) {
			ranCalls(2)(t, r)
			if th := gjson.GetBytes(r.lastBody(), `messages.#(role=="assistant").content.0`); th.Get("type").Str != "thinking" || th.Get("signature").Str == "" {
				t.Errorf("the follow-up's assistant message does not start with the signed thinking: %s", th.Raw)
			}
		}},
		{name: "input in content_block_start", turns: []llmtest.Turn{at("anthropic_ptc.sse"), {Text: "ok"}}, check: ranCalls(2)},
		{name: "message given whole in message_start", turns: []llmtest.Turn{at("anthropic_prepopulated.sse"), {Text: "ok"}}, check: ranCalls(1)},
		{name: "call without arguments", turns: []llmtest.Turn{at("anthropic_tool_no_args.sse"), {Text: "ok"}}, check: ranCalls(1)},
		{name: "cost from the table", agent: `{"model": "claude-sonnet-4-5"}`, turns: []llmtest.Turn{{Text: "ok", Usage: &llmtest.Usage{Input: 1000, Output: 100}}}, check: costFrom("table", "")},
		{name: "reasoning setting", agent: `{"model": "claude-sonnet-4-5", "reasoning_budget": 4096, "max_tokens": 1000}`, turns: []llmtest.Turn{{Text: "ok"}}, check: func(t *testing.T, r contractRun) {
			sentPath("thinking", `{"type":"enabled","budget_tokens":4096}`)(t, r)
			sentPath("max_tokens", "5096")(t, r)
		}},
		{name: "overloaded midway", turns: []llmtest.Turn{at("anthropic_overloaded.sse"), {Text: "ok"}}, check: func(t *testing.T, r contractRun) {
			if r.reply != "ok\n" || len(r.reqs) != 2 {
				t.Errorf("reply %q after %d requests", r.reply, len(r.reqs))
			}
		}},
		{name: "reset headers", turns: []llmtest.Turn{{Status: 429, Headers: map[string]string{
			"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": time.Now().Add(30 * time.Minute).UTC().Format(time.RFC3339)}}}, check: gaveUp},
	})
}

func TestContractOllama(t *testing.T) {
	runContract(t, config.KindOllama, []contractCase{
		{name: "length continued once and thinking shown", turns: []llmtest.Turn{at("ollama_length.ndjson"), {Text: " and more", Stop: "max_tokens"}}, check: func(t *testing.T, r contractRun) {
			continuedThenCut("The first line")(t, r)
			r.has(t, "chat", r.chat, "<think>\nWrite it.\n</think>\n")
		}},
		{name: "cut call never runs", turns: []llmtest.Turn{cutCall}, check: cutCallNotRun},
		{name: "calls without ids and thinking sent back", turns: []llmtest.Turn{at("ollama_tools.ndjson"), {Text: "ok"}}, check: func(t *testing.T, r contractRun) {
			ranCalls(2)(t, r)
			if got := gjson.GetBytes(r.lastBody(), `messages.#(role=="assistant").thinking`).Str; got != "List files, then version." {
				t.Errorf("thinking sent back %q", got)
			}
		}},
		{name: "local cost 0", turns: []llmtest.Turn{{Text: "ok"}}, check: costFrom("local", "0")},
		{name: "reasoning setting", agent: `{"reasoning": "off"}`, turns: []llmtest.Turn{{Text: "ok"}}, check: sentPath("think", "false")},
		{name: "no tools so fenced", turns: []llmtest.Turn{{Status: 400, Raw: `{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}`}, {Text: "ok"}}, check: func(t *testing.T, r contractRun) {
			r.has(t, "chat", r.chat, "using fenced execute_code blocks")
		}},
		{name: "retry-after", turns: []llmtest.Turn{{Status: 429, Headers: map[string]string{"Retry-After": "1800"}}}, check: gaveUp},
	})
}

// A backend where nothing listens fails at once, naming the address and
// the fix, for every API.
func TestContractDeadBackend(t *testing.T) {
	for kind, vars := range map[string]map[string]string{
		config.KindOpenAI:    {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "sk-test"},
		config.KindAnthropic: {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "ANTHROPIC_API_KEY": "sk-ant-test"},
		config.KindOllama:    {"OLLAMA_HOST": "127.0.0.1:1"},
	} {
		t.Run(kind, func(t *testing.T) {
			cfg := testutil.Home(t, vars)
			var bes []backend.Backend
			for _, bc := range cfg.Backends {
				if bc.Kind != kind {
					continue
				}
				be, err := backend.New(bc, cfg.Secrets[bc.Name], nil)
				if err != nil {
					t.Fatal(err)
				}
				bes = append(bes, be)
			}
			r := agent.New(agent.Options{Config: cfg, Backends: bes, RetryBase: time.Second})
			testutil.Daemon(t, cfg, daemon.Options{Runner: r, Models: r.Models})
			e := &env{t: t, cfg: cfg, fsys: testutil.Dial(t, cfg), cwd: t.TempDir()}
			s := e.newSession("model=m")
			wait, _ := e.ask(s, "hi")
			if !strings.Contains(wait, "nothing answers at http://127.0.0.1:1") || !strings.Contains(wait, "configure a backend") {
				t.Errorf("wait = %q", wait)
			}
			if chat := e.read("s/" + s + "/chat"); strings.Contains(chat, "retrying") {
				t.Errorf("a dead backend was retried:\n%s", chat)
			}
		})
	}
}
