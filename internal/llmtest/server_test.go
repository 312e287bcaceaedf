package llmtest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
)

var update = flag.Bool("update", false, "rewrite the golden streams in testdata")

// post sends a chat request in an API's shape and returns the status and
// the body as read until the server stopped.
func post(t *testing.T, srv *llmtest.Server, path, body string, header ...string) (int, []byte, error) {
	t.Helper()
	return send(t, http.MethodPost, srv.URL+path, body, header...)
}

func send(t *testing.T, method, url, body string, header ...string) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

var chatPaths = []struct{ api, path, body, model string }{
	{"openai", "/v1/chat/completions", `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "gpt-x"},
	{"anthropic", "/v1/messages", `{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "claude-x"},
	{"ollama", "/api/chat", `{"model":"llama-x","messages":[{"role":"user","content":"hi"}],"options":{"num_ctx":4096}}`, "llama-x"},
}

var goldenTurn = llmtest.Turn{
	Thinking: "Think.",
	Text:     "Hi \"there\" — ok",
	Calls: []llmtest.Call{
		llmtest.ExecuteCode("bash", "echo a"),
		{ID: "call_fixed", Name: "execute_code", Args: json.RawMessage(`{"steps": [{"code": "pwd", "language": "sh"}]}`)},
	},
	Usage: &llmtest.Usage{Input: 50, Output: 12, CacheRead: 20, CacheWrite: 5},
}

// TestGolden pins each API's generated stream byte for byte, and checks
// that instant mode sends the same bytes without pauses, and Render too. Read the golden
// files against the APIs' documentation when they change (go test
// -update rewrites them).
func TestGolden(t *testing.T) {
	for _, c := range chatPaths {
		t.Run(c.api, func(t *testing.T) {
			var got [2][]byte
			for i, instant := range []bool{false, true} {
				srv := llmtest.NewTest(t, &llmtest.Script{Turns: []llmtest.Turn{goldenTurn}, Chunk: 5, Instant: instant})
				status, body, err := post(t, srv, c.path, c.body)
				if err != nil || status != http.StatusOK {
					t.Fatalf("status %d: %v", status, err)
				}
				got[i] = body
			}
			if !bytes.Equal(got[0], got[1]) {
				t.Errorf("instant mode sent other bytes:\n%s\nvs\n%s", got[1], got[0])
			}
			rendered, err := llmtest.Render(c.api, goldenTurn, 5, c.model)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rendered, got[0]) {
				t.Errorf("Render made other bytes:\n%s\nvs\n%s", rendered, got[0])
			}
			file := filepath.Join("testdata", "golden_"+c.api+".txt")
			if *update {
				if err := os.WriteFile(file, got[0], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[0], want) {
				t.Errorf("stream differs from %s:\n%s", file, got[0])
			}
		})
	}
}

func TestFailures(t *testing.T) {
	long := strings.Repeat("abcd", 20)
	for _, c := range chatPaths {
		t.Run(c.api, func(t *testing.T) {
			srv := llmtest.NewTest(t, &llmtest.Script{Turns: []llmtest.Turn{
				{Status: 429, RetryAfter: 3},
				{Overflow: true},
				{Text: long, CutAfter: 2},
				{Text: long, FailAfter: 2},
			}})
			req, _ := http.NewRequest(http.MethodPost, srv.URL+c.path, strings.NewReader(c.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
				t.Errorf("rate limit: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
			}
			status, body, _ := post(t, srv, c.path, c.body)
			if status != 400 || !bytes.Contains(bytes.ToLower(body), []byte("context")) && !bytes.Contains(body, []byte("too long")) {
				t.Errorf("overflow: %d %s", status, body)
			}
			_, body, err = post(t, srv, c.path, c.body)
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) == 0 {
				t.Errorf("cut: read %d bytes, error %v; want some bytes then an unexpected EOF", len(body), err)
			}
			_, body, err = post(t, srv, c.path, c.body)
			if err != nil || !bytes.Contains(body, []byte(`"error"`)) {
				t.Errorf("error event: %v %s", err, body)
			}
		})
	}
}

func TestRulesAndLoop(t *testing.T) {
	sc, err := llmtest.ParseScript([]byte(`{
		"loop": true,
		"turns": [{"text": "first"}, {"text": "second"}],
		"rules": [
			{"if": "^run (.+)$", "then": {"calls": [{"name": "execute_code", "args": {"steps": [{"code": "{{1}}", "language": "bash"}]}}]}},
			{"role": "tool", "if": "(?s).*", "then": {"text": "the tool said: {{last}}"}}
		]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewTest(t, sc)
	chat := func(msgs string) (string, string) {
		_, body, err := post(t, srv, "/api/chat", `{"model":"m","messages":`+msgs+`}`)
		if err != nil {
			t.Fatal(err)
		}
		return ollamaText(t, body), string(body)
	}
	if _, got := chat(`[{"role":"user","content":"run echo \"hi\" | wc"}]`); !strings.Contains(got, `"arguments":{"steps":[{"code":"echo \"hi\" | wc","language":"bash"}]}`) {
		t.Errorf("rule call: %s", got)
	}
	if got, _ := chat(`[{"role":"tool","content":"3 lines"}]`); got != "the tool said: 3 lines" {
		t.Errorf("tool rule: %q", got)
	}
	var texts []string
	for range 3 {
		got, _ := chat(`[{"role":"user","content":"hello"}]`)
		texts = append(texts, got)
	}
	if strings.Join(texts, " ") != "first second first" {
		t.Errorf("looping turns gave %q", texts)
	}
	if n := len(srv.Requests()); n != 5 || srv.Requests()[0].Messages[0].Text != `run echo "hi" | wc` {
		t.Errorf("recorded %d requests: %+v", n, srv.Requests())
	}
}

func TestDefaultAndAppend(t *testing.T) {
	srv := llmtest.NewTest(t, &llmtest.Script{Default: &llmtest.Turn{Text: "echo: {{last}}"}})
	_, body, _ := post(t, srv, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"ping"}]}`)
	if got := ollamaText(t, body); got != "echo: ping" {
		t.Errorf("default turn: %q", got)
	}
	if err := srv.Append(llmtest.Turn{Text: "appended"}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = post(t, srv, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"ping"}]}`)
	if got := ollamaText(t, body); got != "appended" {
		t.Errorf("appended turn: %q", got)
	}
	if err := srv.Append(llmtest.Turn{Calls: []llmtest.Call{{Name: ""}}}); err == nil {
		t.Errorf("appending a call without a name succeeded")
	}
}

// ollamaText joins the message text of an Ollama stream.
func ollamaText(t *testing.T, body []byte) string {
	t.Helper()
	var b strings.Builder
	for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		var c struct {
			Message struct{ Content string }
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("line %s: %v", line, err)
		}
		b.WriteString(c.Message.Content)
	}
	return b.String()
}

// TestDemoScript keeps the example of docs/backends.md working.
func TestDemoScript(t *testing.T) {
	sc, err := llmtest.LoadScript(filepath.Join("testdata", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Latency = 0
	srv := llmtest.NewTest(t, sc)
	_, body, _ := post(t, srv, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"Run uname -a"}]}`)
	if !bytes.Contains(body, []byte(`"arguments":{"steps":[{"code":"uname -a","language":"bash"}]}`)) {
		t.Errorf("run rule: %s", body)
	}
	_, body, _ = post(t, srv, "/api/chat", `{"model":"m","messages":[{"role":"tool","content":"Linux box"}]}`)
	if got := ollamaText(t, body); got != "The command printed:\nLinux box" {
		t.Errorf("tool rule: %q", got)
	}
	_, body, _ = post(t, srv, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	if got := ollamaText(t, body); !strings.HasSuffix(got, "You said: hello") {
		t.Errorf("default: %q", got)
	}
}

func TestLatency(t *testing.T) {
	// Paced streams arrive whole; the pause itself is not timed here.
	srv := llmtest.NewTest(t, &llmtest.Script{Latency: llmtest.Duration(time.Millisecond), Turns: []llmtest.Turn{{Text: "a paced reply"}}})
	_, body, err := post(t, srv, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if got := ollamaText(t, body); err != nil || got != "a paced reply" {
		t.Errorf("got %q, %v", got, err)
	}
}
