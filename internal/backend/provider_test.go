package backend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
)

// Contract tests on recorded provider streams (see testdata/PROVENANCE.md):
// refusals, replies cut at the output limit, reasoning, signed thinking,
// tool input given in content_block_start, reported and local cost. Each
// stream is replayed byte for byte.

// replayed is what one recorded stream must decode to.
type replayed struct {
	file, kind, path string
	text, thinking   string
	refusal          string // text of the EventRefusal events
	refused          bool
	stop             backend.StopReason
	calls            []backend.ToolCall
	signed           []backend.Thinking
	cost             float64
	priced           backend.CostSource
}

const recordedSignature = "ErUBCkYIARgCIkACJWxzySUOJzOlZ8WFdgQSbeQA3H1i5rfkKLV9eC4HN6Jcnrlw1NcnPRIPaTs9jLF3rllsfoidjZapJ+5MLwjVEgzTfQ6r9tDZvyBP0nEaDHWRqRWP7CoPOc+ksSIwSlxHzaMbnyXGoiNmCj9thC3N6EDMpemJPx3UZqDtrgmKZgQMMzNzNsh9IxgvtuYKKh1PxXUmWexqlckSVETQj3LbHLK/nwEK+bz0+2b/pA=="

var providerReplays = []replayed{
	{
		file: "openai_refusal.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		text: "I'm sorry, but I can't assist with that request.", refusal: "I'm sorry, but I can't assist with that request.",
		refused: true, stop: backend.StopRefused,
	},
	{
		file: "openai_length.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		text: `{"`, stop: backend.StopMaxTokens,
	},
	{
		file: "openrouter_cost.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		text: "2 + 2 = 4.", thinking: "The user asks for 2+2. Simple.", stop: backend.StopEnd,
		cost: 0.00020436, priced: backend.CostReported,
	},
	{
		file: "deepseek_reasoning.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		text: "9.8 is greater.", thinking: "9.11 is less than 9.8.", stop: backend.StopEnd,
	},
	{
		file: "llamacpp_text.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		text: "Hello! How can I help?", thinking: "The user greets.", stop: backend.StopEnd,
	},
	{
		file: "anthropic_thinking.sse", kind: config.KindAnthropic, path: "/v1/messages",
		text:     "Hello! I'm Assistant, an AI here to help you. How can I assist you today? Feel free to ask questions or let me know what you're looking for, and I'll do my best to help.",
		thinking: `The user has simply said "hey" as a greeting without any specific request or question. I don't need to use any tools for this type of interaction. I should respond with a friendly greeting and ask how I can help them today.`,
		stop:     backend.StopEnd,
		signed: []backend.Thinking{{Signature: recordedSignature,
			Text: `The user has simply said "hey" as a greeting without any specific request or question. I don't need to use any tools for this type of interaction. I should respond with a friendly greeting and ask how I can help them today.`}},
	},
	{
		file: "anthropic_max_tokens.sse", kind: config.KindAnthropic, path: "/v1/messages",
		text: "I'll write the file.", stop: backend.StopMaxTokens,
		// The cut input is not JSON: it arrives as a string holding it.
		calls: []backend.ToolCall{{ID: "toolu_01MaxTok9pLq2wE", Name: "execute_code",
			Args: json.RawMessage(`"{\"steps\": [{\"language\": \"bash\", \"code\": \"cat \u003e a.txt \u003c\u003cEOF\\nline"`)}},
	},
	{
		file: "anthropic_ptc.sse", kind: config.KindAnthropic, path: "/v1/messages",
		stop: backend.StopToolUse,
		calls: []backend.ToolCall{
			{ID: "toolu_01Ptc1aB", Name: "execute_code", Args: json.RawMessage(args0)},
			{ID: "toolu_01Ptc2cD", Name: "execute_code", Args: json.RawMessage(args1)},
		},
	},
	{
		file: "anthropic_refusal_details.sse", kind: config.KindAnthropic, path: "/v1/messages",
		// No content at all: the refusal's text is stop_details.explanation.
		text: "This request was blocked under the usage policy.", refusal: "This request was blocked under the usage policy.",
		refused: true, stop: backend.StopRefused,
	},
	{
		file: "anthropic_prepopulated.sse", kind: config.KindAnthropic, path: "/v1/messages",
		// The whole message in message_start, no message_delta.
		stop:  backend.StopToolUse,
		calls: []backend.ToolCall{{ID: "toolu_01Pre9xY", Name: "execute_code", Args: json.RawMessage(`{"steps":[{"language":"bash","code":"ls"}]}`)}},
	},
	{
		file: "anthropic_thinking_spaced.sse", kind: config.KindAnthropic, path: "/v1/messages",
		text: "The digits of 1234 sum to **10**.", thinking: "Sum the digits of 1234: 10.", stop: backend.StopEnd,
		signed: []backend.Thinking{{Text: "Sum the digits of 1234: 10.",
			Signature: "EqQBCkYIBRgCKkBv3Xn0Ql9sT2uW5yZ8aB1cD4eF7gH0iJ3kL6mN9oP2qR5sT8uV1wX4yZ7aB0cD3eF6gH9iJ2kL5mN8oP1qR4sEgxZ7aB0cD3eF6gH9iJ2kGgwL5mN8oP1qR4sT7uV0wX3yZ6aB9cD2eF5gH8iJ1kL4mN7oP0qR3sT6uV9wX2yZ5a=="}},
	},
	{
		file: "anthropic_tool_no_args.sse", kind: config.KindAnthropic, path: "/v1/messages",
		text: "Running it now.", stop: backend.StopToolUse,
		calls: []backend.ToolCall{{ID: "toolu_01NoArgs7qZ", Name: "execute_code", Args: json.RawMessage(`{}`)}},
	},
	{
		file: "deepseek_tool_reasoning.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		thinking: "List the directory first.", stop: backend.StopToolUse,
		calls: []backend.ToolCall{{ID: "call_00_Xk3mP9qR2sT5uV8w", Name: "execute_code", Args: json.RawMessage(`{"steps": [{"language": "bash", "code": "ls"}]}`)}},
	},
	{
		file: "ollama_length.ndjson", kind: config.KindOllama, path: "/api/chat",
		text: "The first line", thinking: "Write it.", stop: backend.StopMaxTokens,
		priced: backend.CostLocal,
	},
	{
		file: "ollama_tools.ndjson", kind: config.KindOllama, path: "/api/chat",
		text: "Checking both.", thinking: "List files, then version.", stop: backend.StopToolUse,
		calls: []backend.ToolCall{
			{ID: "call_1", Name: "execute_code", Args: json.RawMessage(args0)},
			{ID: "call_2", Name: "execute_code", Args: json.RawMessage(args1)},
		},
		priced: backend.CostLocal,
	},
}

func TestProviderReplay(t *testing.T) {
	for _, c := range providerReplays {
		t.Run(c.file, func(t *testing.T) {
			turn := llmtest.Turn{RawFile: filepath.Join("testdata", c.file)}
			b, srv := newPair(t, c.kind, &llmtest.Script{Turns: []llmtest.Turn{turn, turn}})
			want, err := os.ReadFile(turn.RawFile)
			if err != nil {
				t.Fatal(err)
			}
			if got := rawPost(t, srv, c.path); !bytes.Equal(got, want) {
				t.Fatalf("server sent %d bytes that differ from the %d recorded", len(got), len(want))
			}
			var thinking, refusal strings.Builder
			r, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "go"}}},
				func(e backend.Event) error {
					switch e.Kind {
					case backend.EventThinking:
						thinking.WriteString(e.Text)
					case backend.EventRefusal:
						refusal.WriteString(e.Text)
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			checkProvider(t, &c, r, thinking.String(), refusal.String())
		})
	}
}

func checkProvider(t *testing.T, c *replayed, r *backend.Reply, thinking, refusal string) {
	t.Helper()
	m := r.Message
	if m.Text != c.text || thinking != c.thinking || refusal != c.refusal || m.Refused != c.refused || r.Stop != c.stop {
		t.Errorf("text %q thinking %q refusal %q refused %v stop %q\nwant %q %q %q %v %q",
			m.Text, thinking, refusal, m.Refused, r.Stop, c.text, c.thinking, c.refusal, c.refused, c.stop)
	}
	if strings.Contains(m.Text, thinking) && thinking != "" {
		t.Errorf("the reasoning is in the answer: %q", m.Text)
	}
	if len(m.Calls) != len(c.calls) {
		t.Fatalf("calls %+v, want %+v", m.Calls, c.calls)
	}
	for i, call := range m.Calls {
		w := c.calls[i]
		if call.ID != w.ID || call.Name != w.Name || !jsonEqual(call.Args, w.Args) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, call.ID, call.Name, call.Args, w.ID, w.Name, w.Args)
		}
	}
	// Signed thinking is kept as signed; unsigned reasoning is kept whole,
	// as one block, for the APIs that want it back.
	kept := c.signed
	if kept == nil && c.thinking != "" {
		kept = []backend.Thinking{{Text: c.thinking}}
	}
	if len(m.Thinking) != len(kept) {
		t.Fatalf("kept thinking %+v, want %+v", m.Thinking, kept)
	}
	for i, th := range m.Thinking {
		if th != kept[i] {
			t.Errorf("kept thinking %d = %+v, want %+v", i, th, kept[i])
		}
	}
	if r.Priced != c.priced || r.Cost != c.cost {
		t.Errorf("cost %v from %q, want %v from %q", r.Cost, r.Priced, c.cost, c.priced)
	}
}

// TestAnthropicThinkingSentBack checks the follow-up request of a
// tool-use turn with thinking on: the recorded thinking block goes back
// first in the assistant message, text and signature byte for byte.
func TestAnthropicThinkingSentBack(t *testing.T) {
	turn := llmtest.Turn{RawFile: filepath.Join("testdata", "anthropic_tools.sse")}
	b, srv := newPair(t, config.KindAnthropic, &llmtest.Script{Turns: []llmtest.Turn{turn, {Text: "Both done."}}})
	msgs := []backend.Message{{Role: backend.RoleUser, Text: "check"}}
	r, err := b.Chat(context.Background(), &backend.Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Message.Thinking) != 1 || r.Message.Thinking[0].Signature == "" {
		t.Fatalf("signed thinking %+v", r.Message.Thinking)
	}
	// Through the history on disk, as the agent keeps it.
	raw, _ := json.Marshal(r.Message)
	var kept backend.Message
	if err := json.Unmarshal(raw, &kept); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, kept)
	for _, c := range kept.Calls {
		msgs = append(msgs, backend.Message{Role: backend.RoleTool, CallID: c.ID, Text: "ok"})
	}
	if _, err := b.Chat(context.Background(), &backend.Request{Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[1].Body
	first := gjson.GetBytes(body, "messages.1.content.0")
	if first.Get("type").Str != "thinking" || first.Get("thinking").Str != r.Message.Thinking[0].Text ||
		first.Get("signature").Str != r.Message.Thinking[0].Signature {
		t.Fatalf("first block of the assistant message sent back = %s", first.Raw)
	}
	recorded, _ := os.ReadFile(turn.RawFile)
	sig := gjson.Get(sseData(recorded, "signature_delta"), "delta.signature").Str
	if sig == "" || !bytes.Contains(body, []byte(`"signature":"`+sig+`"`)) {
		t.Fatalf("the recorded signature %q is not in the request bytes", sig)
	}
	if n := gjson.GetBytes(body, "messages.1.content.#").Int(); n != int64(2+len(kept.Calls)) {
		t.Errorf("assistant message has %d blocks, want thinking, text and %d tool_use", n, len(kept.Calls))
	}
}

// sseData returns the data of the first event in an SSE stream whose data
// contains marker.
func sseData(stream []byte, marker string) string {
	for _, line := range strings.Split(string(stream), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, marker) {
			return d
		}
	}
	return ""
}

// Tool arguments are kept and sent back as the model wrote them, even
// through the JSON of the history.
func TestToolArgsKeptExactly(t *testing.T) {
	spaced := json.RawMessage("{\"steps\": [{\"code\": \"ls\",  \"language\": \"bash\"}]}")
	for _, args := range []json.RawMessage{spaced, json.RawMessage(args0)} {
		raw, err := json.Marshal(backend.Message{Role: backend.RoleAssistant, Calls: []backend.ToolCall{{ID: "c1", Name: "execute_code", Args: args}}})
		if err != nil {
			t.Fatal(err)
		}
		var m backend.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if got := m.Calls[0].Args; !bytes.Equal(got, args) {
			t.Errorf("args %s came back as %s (stored %s)", args, got, raw)
		}
		if bytes.Equal(args, spaced) != strings.Contains(string(raw), "args_text") {
			t.Errorf("stored %s", raw)
		}
	}
}

// The scripted server's refusals decode as the recorded ones do, in both
// APIs that have them.
func TestScriptedRefusal(t *testing.T) {
	for _, kind := range []string{config.KindOpenAI, config.KindAnthropic} {
		b, _ := newPair(t, kind, &llmtest.Script{Turns: []llmtest.Turn{{Text: "I can't help with that.", Stop: "refusal"}}})
		r, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "x"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Stop != backend.StopRefused || !r.Message.Refused || r.Message.Text != "I can't help with that." {
			t.Errorf("%s: %+v", kind, r)
		}
	}
}
