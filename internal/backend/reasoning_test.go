package backend_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/llmtest"
)

// hostedAt returns an HTTP client that sends every request, whatever its
// host, to the scripted server: a backend configured with a provider's
// own base URL (https://openrouter.ai written as http) maps its
// reasoning setting as for that provider, and the server records the
// bytes.
func hostedAt(srv *llmtest.Server) *http.Client { return backend.HostedAt(srv.URL) }

// TestReasoningRequestBytes checks, in the bytes each provider is sent,
// how the reasoning setting maps onto it, and that a model the table
// knows refuses reasoning is sent none.
func TestReasoningRequestBytes(t *testing.T) {
	high, budget, off := backend.Reasoning{Effort: "high"}, backend.Reasoning{Budget: 6000}, backend.Reasoning{Effort: "off"}
	for _, c := range []struct {
		name, kind, url, model string
		r                      backend.Reasoning
		maxTokens              int
		temp                   *float64
		want                   map[string]string // gjson path -> raw JSON; "" = absent
	}{
		{name: "openai o3", kind: config.KindOpenAI, url: "http://api.openai.com/v1", model: "o3-mini", r: high,
			want: map[string]string{"reasoning_effort": `"high"`, "reasoning": "", "thinking": ""}},
		{name: "openai gpt-5 budget", kind: config.KindOpenAI, url: "http://api.openai.com/v1", model: "gpt-5", r: budget,
			want: map[string]string{"reasoning_effort": `"medium"`}},
		{name: "openai gpt-4o takes none", kind: config.KindOpenAI, url: "http://api.openai.com/v1", model: "gpt-4o", r: high,
			want: map[string]string{"reasoning_effort": "", "reasoning": ""}},
		{name: "openai gpt-5-chat takes none", kind: config.KindOpenAI, url: "http://api.openai.com/v1", model: "gpt-5-chat-latest", r: high,
			want: map[string]string{"reasoning_effort": ""}},
		{name: "openrouter effort", kind: config.KindOpenAI, url: "http://openrouter.ai/v1", model: "anthropic/claude-sonnet-4", r: high,
			want: map[string]string{"reasoning": `{"effort":"high"}`, "reasoning_effort": ""}},
		{name: "openrouter budget", kind: config.KindOpenAI, url: "http://openrouter.ai/v1", model: "deepseek/deepseek-r1", r: budget,
			want: map[string]string{"reasoning": `{"max_tokens":6000}`}},
		{name: "openrouter off", kind: config.KindOpenAI, url: "http://openrouter.ai/v1", model: "qwen/qwen3-32b", r: off,
			want: map[string]string{"reasoning": `{"enabled":false}`}},
		{name: "deepseek", kind: config.KindOpenAI, url: "http://api.deepseek.com/v1", model: "deepseek-chat", r: high,
			want: map[string]string{"thinking": `{"type":"enabled"}`, "reasoning_effort": `"high"`}},
		{name: "deepseek off", kind: config.KindOpenAI, url: "http://api.deepseek.com/v1", model: "deepseek-chat", r: off,
			want: map[string]string{"thinking": `{"type":"disabled"}`, "reasoning_effort": ""}},
		{name: "compatible server", kind: config.KindOpenAI, url: "http://groq.test/v1", model: "openai/gpt-oss-20b", r: backend.Reasoning{Effort: "low"},
			want: map[string]string{"reasoning_effort": `"low"`}},
		{name: "no setting", kind: config.KindOpenAI, url: "http://api.openai.com/v1", model: "o3", r: backend.Reasoning{},
			want: map[string]string{"reasoning_effort": "", "reasoning": ""}},
		{name: "anthropic budget over max_tokens", kind: config.KindAnthropic, url: "http://api.anthropic.com", model: "claude-sonnet-4-5", r: budget, maxTokens: 2000, temp: ptr(0.3),
			want: map[string]string{"thinking": `{"type":"enabled","budget_tokens":6000}`, "max_tokens": "8000", "temperature": ""}},
		{name: "anthropic effort, default max_tokens", kind: config.KindAnthropic, url: "http://api.anthropic.com", model: "claude-opus-4-1", r: high,
			want: map[string]string{"thinking": `{"type":"enabled","budget_tokens":24576}`, "max_tokens": "32000"}},
		{name: "anthropic old model takes none", kind: config.KindAnthropic, url: "http://api.anthropic.com", model: "claude-3-5-haiku-20241022", r: high, temp: ptr(0.3),
			want: map[string]string{"thinking": "", "temperature": "0.3"}},
		{name: "anthropic off", kind: config.KindAnthropic, url: "http://api.anthropic.com", model: "claude-sonnet-4-5", r: off,
			want: map[string]string{"thinking": ""}},
		{name: "ollama", kind: config.KindOllama, url: "http://ollama.test:11434", model: "qwen3:8b", r: high,
			want: map[string]string{"think": "true"}},
		{name: "ollama off", kind: config.KindOllama, url: "http://ollama.test:11434", model: "qwen3:8b", r: off,
			want: map[string]string{"think": "false"}},
		{name: "ollama gpt-oss level", kind: config.KindOllama, url: "http://ollama.test:11434", model: "gpt-oss:20b", r: budget,
			want: map[string]string{"think": `"medium"`}},
		{name: "ollama no setting", kind: config.KindOllama, url: "http://ollama.test:11434", model: "qwen3:8b",
			want: map[string]string{"think": ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewTest(t, &llmtest.Script{Key: testKey, Turns: []llmtest.Turn{{Text: "ok"}},
				Models: []llmtest.Model{{ID: c.model, Context: 16384}}})
			b, err := backend.New(config.Backend{Name: "p", Kind: c.kind, BaseURL: c.url, Model: c.model}, testKey, hostedAt(srv))
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.Chat(context.Background(), &backend.Request{Reasoning: c.r, MaxTokens: c.maxTokens, Temperature: c.temp, NumCtx: 4096,
				Messages: []backend.Message{{Role: backend.RoleUser, Text: "think"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[len(srv.Requests())-1].Body
			for path, want := range c.want {
				got := gjson.GetBytes(body, path)
				if want == "" && got.Exists() || want != "" && compactRaw(got.Raw) != want {
					t.Errorf("%s = %s, want %q\nbody %s", path, got.Raw, want, body)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// compactRaw drops the spaces of a JSON value outside strings, and sorts
// nothing: the wanted values are written in the order the SDKs send.
func compactRaw(s string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '"' && (i == 0 || s[i-1] != '\\') {
			in = !in
		}
		if !in && (ch == ' ' || ch == '\n' || ch == '\t') {
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// TestReasoningRejectedNamed: what servers say when they refuse a
// reasoning parameter is told apart from other bad requests.
func TestReasoningRejectedNamed(t *testing.T) {
	for _, c := range []struct {
		status  int
		message string
		want    bool
	}{
		{400, "Unsupported parameter: 'reasoning_effort' is not supported with this model.", true},
		{400, "Unrecognized request argument supplied: reasoning_effort", true},
		{400, `"llama3.2:latest" does not support thinking`, true},
		{422, "reasoning_effort: Extra inputs are not permitted", true},
		{400, "thinking: unknown field", true},
		{400, "messages.1: a final assistant message must start with a thinking block", false},
		{400, "max_tokens: invalid value", false},
		{429, "reasoning_effort is not supported", false},
		{400, "This model's maximum context length is 8192 tokens (reasoning included)", false},
	} {
		srv := llmtest.NewTest(t, &llmtest.Script{Key: testKey, Turns: []llmtest.Turn{{Status: c.status,
			Raw: `{"error":{"message":` + strconv.Quote(c.message) + `,"type":"invalid_request_error"}}`}}})
		b := newBackend(t, config.KindOpenAI, srv, testKey)
		_, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "x"}}}, nil)
		if got := backend.IsReasoningRejected(err); got != c.want {
			t.Errorf("%d %q: IsReasoningRejected = %v, want %v (err %v, kind %v)", c.status, c.message, got, c.want, err, errs.KindOf(err))
		}
	}
}

// The reasoning of a DeepSeek tool-use turn goes back as
// reasoning_content in the follow-up request, which DeepSeek's thinking
// mode requires; other OpenAI-compatible servers are not sent the field,
// and Ollama gets it as the message's thinking.
func TestUnsignedReasoningSentBack(t *testing.T) {
	for _, c := range []struct {
		name, kind, url, file, path string
	}{
		{"deepseek", config.KindOpenAI, "http://api.deepseek.com/v1", "deepseek_tool_reasoning.sse", `messages.#(role=="assistant").reasoning_content`},
		{"other server", config.KindOpenAI, "http://vllm.test/v1", "deepseek_tool_reasoning.sse", `messages.#(role=="assistant").reasoning_content`},
		{"ollama", config.KindOllama, "http://ollama.test:11434", "ollama_tools.ndjson", `messages.#(role=="assistant").thinking`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewTest(t, &llmtest.Script{Key: testKey, Models: []llmtest.Model{{ID: testModel, Context: 16384}},
				Turns: []llmtest.Turn{{RawFile: filepath.Join("testdata", c.file)}, {Text: "done"}}})
			b, err := backend.New(config.Backend{Name: "p", Kind: c.kind, BaseURL: c.url, Model: testModel}, testKey, hostedAt(srv))
			if err != nil {
				t.Fatal(err)
			}
			msgs := []backend.Message{{Role: backend.RoleUser, Text: "list"}}
			r, err := b.Chat(context.Background(), &backend.Request{Messages: msgs, NumCtx: 4096}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Message.Calls) == 0 || len(r.Message.Thinking) != 1 {
				t.Fatalf("reply %+v", r.Message)
			}
			msgs = append(msgs, r.Message)
			for _, call := range r.Message.Calls {
				msgs = append(msgs, backend.Message{Role: backend.RoleTool, CallID: call.ID, Text: "a b c"})
			}
			if _, err := b.Chat(context.Background(), &backend.Request{Messages: msgs, NumCtx: 4096}, nil); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			got := gjson.GetBytes(reqs[len(reqs)-1].Body, c.path)
			want := r.Message.Thinking[0].Text
			if c.name == "other server" {
				if got.Exists() {
					t.Errorf("a server other than DeepSeek was sent reasoning_content %s", got.Raw)
				}
				return
			}
			if got.Str != want {
				t.Errorf("%s = %s, want %q\nbody %s", c.path, got.Raw, want, reqs[len(reqs)-1].Body)
			}
		})
	}
}
