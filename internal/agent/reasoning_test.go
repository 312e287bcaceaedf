package agent_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// The agent's reasoning setting reaches the request; a model that refuses
// it (Ollama: "... does not support thinking") is asked again at once
// without it, said once in chat and events, and never sent it again.
func TestReasoningRefusedLearned(t *testing.T) {
	e := newEnv(t, config.KindOllama, &llmtest.Script{Turns: []llmtest.Turn{
		{Status: 400, Raw: `{"error":"\"llama3.2:latest\" does not support thinking"}`},
		{Text: "Hello."},
		{Text: "Again."},
	}})
	e.write("a/thinker.json", `{"reasoning": "high"}`)
	s := e.newSession("agent=thinker")
	if wait, reply := e.ask(s, "hi"); wait != "idle\n" || reply != "Hello.\n" {
		t.Fatalf("wait %q reply %q", wait, reply)
	}
	e.ask(s, "more")
	reqs := e.llm.Requests()
	var chats [][]byte
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/api/chat") {
			chats = append(chats, r.Body)
		}
	}
	if len(chats) != 3 {
		t.Fatalf("%d chat requests, want 3", len(chats))
	}
	if got := gjson.GetBytes(chats[0], "think").Raw; got != "true" {
		t.Errorf("first request: think = %q, want true", got)
	}
	for i, b := range chats[1:] {
		if gjson.GetBytes(b, "think").Exists() {
			t.Errorf("request %d still sends think: %s", i+2, b)
		}
	}
	chat := e.read("s/" + s + "/chat")
	if n := strings.Count(chat, "takes no reasoning setting"); n != 1 {
		t.Errorf("the refusal is said %d times:\n%s", n, chat)
	}
	if strings.Contains(chat, "retrying") {
		t.Errorf("a refused parameter was retried as a server failure:\n%s", chat)
	}
	if ev := e.events(s); strings.Count(ev, `"type":"reasoning_rejected"`) != 1 {
		t.Errorf("events:\n%s", ev)
	}
}

// A reply of text cut at max_tokens is continued once: Anthropic and
// Ollama get the cut text as a prefill to go on from, OpenAI as a
// finished message and a note; the reply and the history hold the two
// parts as one message; a second cut is said, not continued again.
func TestCutReplyContinuedOnce(t *testing.T) {
	for _, kind := range []string{config.KindOpenAI, config.KindAnthropic, config.KindOllama} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, kind, &llmtest.Script{Turns: []llmtest.Turn{
				{Text: "The first half, ", Stop: "max_tokens"},
				{Text: "the second half."},
				{Text: "Cut once", Stop: "max_tokens"},
				{Text: " and cut again", Stop: "max_tokens"},
				{Text: "never asked"},
			}})
			s := e.newSession("")
			wait, reply := e.ask(s, "write")
			want := "The first half, the second half.\n"
			if kind == config.KindAnthropic {
				want = "The first half,the second half.\n" // the prefill loses its trailing space, as the API wants
			}
			if wait != "idle\n" || reply != want {
				t.Fatalf("wait %q reply %q, want %q", wait, reply, want)
			}
			reqs := chatRequests(e.llm)
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			switch kind {
			case config.KindOpenAI:
				n := len(msgs)
				if n < 2 || msgs[n-2].Role != "assistant" || msgs[n-2].Text != "The first half, " || msgs[n-1].Role != "user" || !strings.Contains(msgs[n-1].Text, "Continue it exactly") {
					t.Errorf("continuation request: %+v", msgs)
				}
			default:
				last := msgs[len(msgs)-1]
				if last.Role != "assistant" || strings.TrimSpace(last.Text) != "The first half," {
					t.Errorf("continuation request does not end with the prefill: %+v", msgs)
				}
			}
			chat := e.read("s/" + s + "/chat")
			if !strings.Contains(chat, ":: reply cut at max_tokens (") || !strings.Contains(chat, "asking once for the rest") {
				t.Errorf("chat:\n%s", chat)
			}
			if ev := e.events(s); !strings.Contains(ev, `"type":"continued"`) {
				t.Errorf("no continued event:\n%s", ev)
			}

			// Cut twice: continued once, then said to be cut.
			_, reply = e.ask(s, "again")
			if reply != "Cut once and cut again\n" {
				t.Errorf("reply %q", reply)
			}
			reqs = chatRequests(e.llm)
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			// The history holds the first reply whole, as one message,
			// and no note.
			var assistant []string
			for _, m := range reqs[2].Messages {
				if m.Role == "assistant" {
					assistant = append(assistant, m.Text)
				}
				if strings.Contains(m.Text, "Continue it exactly") {
					t.Errorf("the note entered the history: %+v", reqs[2].Messages)
				}
			}
			if len(assistant) != 1 || strings.TrimSpace(assistant[0]) != strings.TrimSpace(want) {
				t.Errorf("history's assistant messages %q", assistant)
			}
			chat = e.read("s/" + s + "/chat")
			if !strings.Contains(chat, "the reply may be incomplete") {
				t.Errorf("the second cut is not said:\n%s", chat)
			}
		})
	}
}

func chatRequests(srv *llmtest.Server) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/api/chat") || strings.HasSuffix(r.Path, "/chat/completions") || strings.HasSuffix(r.Path, "/messages") {
			out = append(out, r)
		}
	}
	return out
}

// While a turn waits out a rate limit, state says why, how long is left
// and at which backend, counted at each read; chat has one line for the
// wait, the retry event its end, and the state is plain again after.
func TestRateLimitCountdownInState(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{
		{Status: 429, RetryAfter: 120}, {Text: "never"},
	}})
	s := e.newSession("")
	e.write("s/"+s+"/prompt", "hi\n")
	re := regexp.MustCompile(`^waiting: rate limited, retry in ([0-9]+)s \(backend [A-Za-z0-9._-]+\)\n$`)
	var state string
	testutil.Until(t, "state says the turn waits", func() bool {
		state = e.read("s/" + s + "/state")
		return strings.HasPrefix(state, "waiting")
	})
	m := re.FindStringSubmatch(state)
	if m == nil {
		t.Fatalf("state %q", state)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 || n > 120 {
		t.Errorf("state %q: the time left is not within the wait asked for", state)
	}
	ev := e.events(s)
	if !strings.Contains(ev, `"reason":"rate limited"`) || !strings.Contains(ev, `"until":"`) || !strings.Contains(ev, `"backend":"`) {
		t.Errorf("retry event:\n%s", ev)
	}
	e.write("s/"+s+"/ctl", "stop\n")
	e.read("s/" + s + "/wait")
	if st := e.read("s/" + s + "/state"); strings.Contains(st, "retry in") {
		t.Errorf("after the stop, state %q", st)
	}
	if chat := e.read("s/" + s + "/chat"); strings.Count(chat, "retrying in") != 1 {
		t.Errorf("chat has not one line for the wait:\n%s", chat)
	}
}

// context holds a tool call's arguments as each API was sent them: the
// JSON value in args is the input object Anthropic and Ollama get, byte
// for byte, and args_text, kept when the model's text differs from it,
// is the arguments string OpenAI gets back, byte for byte.
func TestContextIsWhatWasSent(t *testing.T) {
	spaced := "{\"steps\": [{\"code\": \"echo  hi\", \"language\": \"bash\"}]}"
	compact := `{"steps":[{"code":"echo  hi","language":"bash"}]}`
	for _, kind := range []string{config.KindOpenAI, config.KindAnthropic, config.KindOllama} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, kind, &llmtest.Script{Turns: []llmtest.Turn{
				{Calls: []llmtest.Call{{Name: "execute_code", Args: json.RawMessage(spaced)}}},
				{Text: "done"},
			}})
			s := e.newSession("")
			e.ask(s, "run")
			var stored struct {
				Calls []struct {
					Args     json.RawMessage `json:"args"`
					ArgsText string          `json:"args_text"`
				} `json:"calls"`
			}
			for _, line := range strings.Split(e.read("s/"+s+"/context"), "\n") {
				if strings.Contains(line, `"calls"`) {
					if err := json.Unmarshal([]byte(line), &stored); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(stored.Calls) != 1 {
				t.Fatalf("context holds calls %+v", stored.Calls)
			}
			reqs := chatRequests(e.llm)
			body := reqs[len(reqs)-1].Body
			var sent string
			switch kind {
			case config.KindOpenAI:
				sent = gjson.GetBytes(body, `messages.#(role=="assistant").tool_calls.0.function.arguments`).Str
				if sent != stored.Calls[0].ArgsText || sent != spaced {
					t.Errorf("sent arguments %q, context args_text %q", sent, stored.Calls[0].ArgsText)
				}
			case config.KindAnthropic:
				sent = gjson.GetBytes(body, `messages.#(role=="assistant").content.#(type=="tool_use").input`).Raw
			case config.KindOllama:
				sent = gjson.GetBytes(body, `messages.#(role=="assistant").tool_calls.0.function.arguments`).Raw
			}
			if kind != config.KindOpenAI && (sent != string(stored.Calls[0].Args) || sent != compact) {
				t.Errorf("sent input %s, context args %s", sent, stored.Calls[0].Args)
			}
		})
	}
}
