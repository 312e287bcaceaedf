package backend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
)

// The contract: every backend, against the scripted server speaking its
// wire format over real HTTP, behaves the same to the agent loop.

const (
	testKey   = "sk-test-3f9a-SECRET"
	testModel = "test-model"
)

var kinds = []string{config.KindOpenAI, config.KindAnthropic, config.KindOllama}

// newPair starts a scripted server requiring testKey and a backend of
// kind talking to it.
func newPair(t testing.TB, kind string, sc *llmtest.Script) (backend.Backend, *llmtest.Server) {
	t.Helper()
	sc.Key = testKey
	if sc.Models == nil {
		sc.Models = []llmtest.Model{{ID: testModel, Context: 16384}, {ID: "other-model"}}
	}
	srv := llmtest.NewTest(t, sc)
	return newBackend(t, kind, srv, testKey), srv
}

func newBackend(t testing.TB, kind string, srv *llmtest.Server, key string) backend.Backend {
	t.Helper()
	url := srv.URL
	if kind == config.KindOpenAI {
		url += "/v1"
	}
	b, err := backend.New(config.Backend{Name: "test-" + kind, Kind: kind, BaseURL: url, Model: testModel}, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// collect runs a chat and returns its events with the reply.
func collect(t *testing.T, b backend.Backend, req *backend.Request) ([]backend.Event, *backend.Reply, error) {
	t.Helper()
	var evs []backend.Event
	r, err := b.Chat(context.Background(), req, func(e backend.Event) error {
		evs = append(evs, e)
		return nil
	})
	return evs, r, err
}

func eachKind(t *testing.T, f func(t *testing.T, kind string)) {
	for _, k := range kinds {
		t.Run(k, func(t *testing.T) { f(t, k) })
	}
}

func TestContractText(t *testing.T) {
	const text = "Hello, world! This reply is streamed in pieces. ünïcödé ✓"
	eachKind(t, func(t *testing.T, kind string) {
		u := &llmtest.Usage{Input: 100, Output: 20, CacheRead: 30, CacheWrite: 10}
		// Paced, as a model streams: the OpenAI backend passes on pieces
		// that arrived together as one (TestOpenAIStreamPieces).
		b, srv := newPair(t, kind, &llmtest.Script{Turns: []llmtest.Turn{{Text: text, Usage: u}}, Latency: llmtest.Duration(2 * time.Millisecond)})
		temp := 0.25
		evs, r, err := collect(t, b, &backend.Request{
			System:      "You are terse.",
			Messages:    []backend.Message{{Role: backend.RoleUser, Text: "say hello"}},
			Tools:       []backend.Tool{executeCode},
			Temperature: &temp,
			MaxTokens:   321,
		})
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		texts := 0
		for _, e := range evs {
			if e.Kind == backend.EventText {
				got.WriteString(e.Text)
				texts++
			}
		}
		if got.String() != text || r.Message.Text != text || texts < 2 {
			t.Errorf("streamed %q in %d pieces, reply %q; want %q in several pieces", got.String(), texts, r.Message.Text, text)
		}
		if last := evs[len(evs)-1]; last.Kind != backend.EventUsage || last.Usage != r.Usage {
			t.Errorf("last event %+v, want the usage %+v", last, r.Usage)
		}
		want := backend.Usage{Input: 100, Output: 20, CacheRead: 30, CacheWrite: 10}
		if kind == config.KindOllama {
			want = backend.Usage{Input: 100, Output: 20} // Ollama counts no cache
		}
		if r.Usage != want || r.Stop != backend.StopEnd || r.Message.Role != backend.RoleAssistant {
			t.Errorf("usage %+v stop %q role %q, want %+v end assistant", r.Usage, r.Stop, r.Message.Role, want)
		}
		checkSent(t, kind, srv.Requests())
	})
}

var executeCode = backend.Tool{
	Name:        "execute_code",
	Description: "Run a pipeline of code stages.",
	Schema:      json.RawMessage(`{"type":"object","properties":{"steps":{"type":"array"},"timeout":{"type":"number"}},"required":["steps"]}`),
}

// checkSent checks what the first chat request carried on the wire.
func checkSent(t *testing.T, kind string, reqs []llmtest.Request) {
	t.Helper()
	var chat *llmtest.Request
	for i := range reqs {
		if reqs[i].Method == http.MethodPost && !strings.HasSuffix(reqs[i].Path, "/show") {
			chat = &reqs[i]
			break
		}
	}
	if chat == nil {
		t.Fatalf("no chat request among %d", len(reqs))
	}
	if chat.Model != testModel || chat.System != "You are terse." || !chat.Stream {
		t.Errorf("sent model %q system %q stream %v", chat.Model, chat.System, chat.Stream)
	}
	if len(chat.Messages) != 1 || chat.Messages[0].Role != "user" || chat.Messages[0].Text != "say hello" {
		t.Errorf("sent messages %+v", chat.Messages)
	}
	if len(chat.Tools) != 1 || chat.Tools[0].Name != "execute_code" || !strings.Contains(string(chat.Tools[0].Schema), `"steps"`) {
		t.Errorf("sent tools %+v", chat.Tools)
	}
	if chat.Temperature == nil || *chat.Temperature != 0.25 || chat.MaxTokens != 321 {
		t.Errorf("sent temperature %v max tokens %d", chat.Temperature, chat.MaxTokens)
	}
	switch kind {
	case config.KindOllama:
		if chat.NumCtx != 16384 {
			t.Errorf("sent num_ctx %d, want the model's 16384", chat.NumCtx)
		}
	case config.KindOpenAI:
		if !chat.IncludeUsage {
			t.Errorf("did not ask for usage in the stream")
		}
	case config.KindAnthropic:
		if chat.CacheMarks != 2 {
			t.Errorf("sent %d cache breakpoints, want 2 (system, last message)", chat.CacheMarks)
		}
	}
}

func TestContractToolCalls(t *testing.T) {
	calls := []llmtest.Call{
		llmtest.ExecuteCode("bash", "ls -l | grep \"go\""),
		{Name: "execute_code", Args: json.RawMessage(`{"steps":[{"code":"print(1)","language":"python3"}],"timeout":5}`)},
	}
	eachKind(t, func(t *testing.T, kind string) {
		b, srv := newPair(t, kind, &llmtest.Script{Turns: []llmtest.Turn{
			{Text: "Running two things.", Calls: calls},
			{Text: "Done."},
		}})
		req := &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "go"}}, Tools: []backend.Tool{executeCode}}
		evs, r, err := collect(t, b, req)
		if err != nil {
			t.Fatal(err)
		}
		var got []backend.ToolCall
		for _, e := range evs {
			if e.Kind == backend.EventToolCall {
				got = append(got, e.Call)
			}
		}
		if len(got) != 2 || len(r.Message.Calls) != 2 || r.Stop != backend.StopToolUse || r.Message.Text != "Running two things." {
			t.Fatalf("got calls %+v, reply %+v", got, r)
		}
		for i, c := range got {
			if c.Name != "execute_code" || c.ID == "" || !jsonEqual(c.Args, calls[i].Args) || c.ID != r.Message.Calls[i].ID {
				t.Errorf("call %d = %s %s %s, want execute_code %s", i, c.ID, c.Name, c.Args, calls[i].Args)
			}
		}
		if got[0].ID == got[1].ID {
			t.Errorf("calls share the id %s", got[0].ID)
		}
		// Send the results back: the server must see the calls and the
		// results, matched, in its own wire format.
		req.Messages = append(req.Messages, r.Message,
			backend.Message{Role: backend.RoleTool, CallID: got[0].ID, Text: "main.go"},
			backend.Message{Role: backend.RoleTool, CallID: got[1].ID, Text: "", Error: true})
		if _, r, err = collect(t, b, req); err != nil || r.Message.Text != "Done." {
			t.Fatalf("second turn: %v %+v", err, r)
		}
		checkResults(t, kind, srv.Requests(), got)
	})
}

func checkResults(t *testing.T, kind string, reqs []llmtest.Request, calls []backend.ToolCall) {
	t.Helper()
	last := reqs[len(reqs)-1]
	m := last.Messages
	if len(m) != 4 || m[1].Role != "assistant" || len(m[1].Calls) != 2 || m[2].Role != "tool" || m[3].Role != "tool" {
		t.Fatalf("sent messages %+v", m)
	}
	for i, c := range m[1].Calls {
		if c.Name != "execute_code" || !jsonEqual(c.Args, calls[i].Args) {
			t.Errorf("sent call %d %+v, want args %s", i, c, calls[i].Args)
		}
	}
	want := []string{calls[0].ID, calls[1].ID}
	if kind == config.KindOllama {
		want = []string{"execute_code", "execute_code"} // Ollama matches results by tool name
	}
	if m[2].CallID != want[0] || m[3].CallID != want[1] || m[2].Text != "main.go" || m[3].Text != "" {
		t.Errorf("sent results %+v %+v, want answers to %v", m[2], m[3], want)
	}
	if strings.Contains(string(last.Body), `"text":""`) {
		t.Errorf("sent an empty text block: %s", last.Body)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// TestDeepStreamEvent: a server that streams an event nested 16 MiB deep
// (in an OpenAI or an Anthropic stream) fails the request with a stream
// error; it once overflowed the stack of the goroutine that decoded it,
// which killed the daemon.
func TestDeepStreamEvent(t *testing.T) {
	deep := strings.Repeat("[", 16<<20)
	for kind, raw := range map[string]string{
		config.KindOpenAI:    "data: " + deep + "\n\n",
		config.KindAnthropic: "event: content_block_delta\ndata: " + deep + "\n\n",
	} {
		t.Run(kind, func(t *testing.T) {
			be, _ := newPair(t, kind, &llmtest.Script{Turns: []llmtest.Turn{{Raw: raw}}})
			req := &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}
			_, err := be.Chat(context.Background(), req, func(backend.Event) error { return nil })
			if err == nil || !strings.Contains(err.Error(), "not JSON") {
				t.Fatalf("Chat = %v, want a stream event that is not JSON", err)
			}
		})
	}
}
