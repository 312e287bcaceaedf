package backend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/llmtest"
)

// Recorded streams in the real wire formats, replayed byte for byte by
// the scripted server: each backend must decode what the real servers
// send, quirks included (OpenAI's obfuscation and usage:null fields,
// llama.cpp's reasoning_content and missing usage, Anthropic's ping and
// thinking signature, Ollama's id-less tool calls with object arguments).

const (
	args0 = `{"steps":[{"code":"ls -la","language":"bash"}]}`
	args1 = `{"steps":[{"code":"go version","language":"bash"}],"timeout":10}`
)

var replays = []struct {
	file, kind, path string
	text, thinking   string
	calls            []backend.ToolCall
	usage            backend.Usage
	stop             backend.StopReason
	model            string
	err              errs.Kind // 0: success
}{
	{
		file: "openai_tools.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		text: "I'll list the files and check Go's version.",
		calls: []backend.ToolCall{
			{ID: "call_q8VzJ3nLk2", Name: "execute_code", Args: json.RawMessage(args0)},
			{ID: "call_R2mWc9TxP4", Name: "execute_code", Args: json.RawMessage(args1)},
		},
		usage: backend.Usage{Input: 212, Output: 71, CacheRead: 1024},
		stop:  backend.StopToolUse, model: "gpt-4.1-2025-04-14",
	},
	{
		file: "llamacpp_text.sse", kind: config.KindOpenAI, path: "/v1/chat/completions",
		text: "Hello! How can I help?", thinking: "The user greets.",
		usage: backend.Usage{Estimated: true}, // no usage chunk: estimated
		stop:  backend.StopEnd, model: "qwen3-8b-q4_k_m.gguf",
	},
	{
		file: "anthropic_tools.sse", kind: config.KindAnthropic, path: "/v1/messages",
		text: "I'll run both checks at once.", thinking: "Two independent checks; run both.",
		calls: []backend.ToolCall{
			{ID: "toolu_01A09q90qw90lq917835lq9", Name: "execute_code", Args: json.RawMessage(args0)},
			{ID: "toolu_01BkN5vGq2mX7cR3tY8wZ4pL", Name: "execute_code", Args: json.RawMessage(args1)},
		},
		usage: backend.Usage{Input: 38, Output: 143, CacheRead: 2048, CacheWrite: 212},
		stop:  backend.StopToolUse, model: "claude-sonnet-4-5-20250929",
	},
	{
		file: "anthropic_overloaded.sse", kind: config.KindAnthropic, path: "/v1/messages",
		text: "Partial", err: errs.Unavailable,
	},
	{
		file: "ollama_tools.ndjson", kind: config.KindOllama, path: "/api/chat",
		text: "Checking both.", thinking: "List files, then version.",
		calls: []backend.ToolCall{
			{ID: "call_1", Name: "execute_code", Args: json.RawMessage(args0)},
			{ID: "call_2", Name: "execute_code", Args: json.RawMessage(args1)},
		},
		usage: backend.Usage{Input: 387, Output: 64},
		stop:  backend.StopToolUse, model: "qwen3:8b",
	},
}

func TestReplay(t *testing.T) {
	for _, c := range replays {
		t.Run(c.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			turn := llmtest.Turn{RawFile: filepath.Join("testdata", c.file)}
			b, srv := newPair(t, c.kind, &llmtest.Script{Turns: []llmtest.Turn{turn, turn}})
			if got := rawPost(t, srv, c.path); !bytes.Equal(got, want) {
				t.Fatalf("server sent %d bytes that differ from the %d recorded", len(got), len(want))
			}
			var thinking strings.Builder
			var calls []backend.ToolCall
			r, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "check"}}},
				func(e backend.Event) error {
					switch e.Kind {
					case backend.EventThinking:
						thinking.WriteString(e.Text)
					case backend.EventToolCall:
						calls = append(calls, e.Call)
					}
					return nil
				})
			if c.err != 0 {
				if !errs.Is(err, c.err) || r == nil || r.Message.Text != c.text {
					t.Fatalf("got %v, partial %+v; want kind %v after %q", err, r, c.err, c.text)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkReplay(t, r, thinking.String(), calls, c.text, c.thinking, c.calls, c.usage, c.stop, c.model)
		})
	}
}

func checkReplay(t *testing.T, r *backend.Reply, thinking string, calls []backend.ToolCall,
	text, wantThinking string, wantCalls []backend.ToolCall, usage backend.Usage, stop backend.StopReason, model string) {
	t.Helper()
	if r.Message.Text != text || thinking != wantThinking || r.Stop != stop || r.Model != model {
		t.Errorf("text %q thinking %q stop %q model %q\nwant %q %q %q %q", r.Message.Text, thinking, r.Stop, r.Model, text, wantThinking, stop, model)
	}
	if len(calls) != len(wantCalls) || len(r.Message.Calls) != len(wantCalls) {
		t.Fatalf("calls %+v, want %+v", calls, wantCalls)
	}
	for i, c := range calls {
		w := wantCalls[i]
		if c.ID != w.ID || c.Name != w.Name || string(c.Args) != string(w.Args) {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Args, w.ID, w.Name, w.Args)
		}
	}
	if usage.Estimated {
		if !r.Usage.Estimated || r.Usage.Input <= 0 || r.Usage.Output <= 0 {
			t.Errorf("usage %+v, want a positive estimate", r.Usage)
		}
	} else if r.Usage != usage {
		t.Errorf("usage %+v, want %+v", r.Usage, usage)
	}
}

// rawPost fetches a scripted turn with a plain HTTP client.
func rawPost(t *testing.T, srv *llmtest.Server, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %v", resp.Status, err)
	}
	return body
}
