package llmtest_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
)

func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	status, body, _ := send(t, http.MethodGet, url, "", header...)
	return status, string(body)
}

func TestModels(t *testing.T) {
	srv := llmtest.NewTest(t, &llmtest.Script{Models: []llmtest.Model{{ID: "m1", Context: 8192}, {ID: "m2"}}})
	cases := []struct {
		name, path string
		header     []string
		body       string // POST body, for /api/show
		status     int
		want       []string
	}{
		{"openai list", "/v1/models", nil, "", 200, []string{`"object":"list"`, `"id":"m1"`, `"max_model_len":8192`, `"id":"m2"`, `"max_model_len":32768`}},
		{"openai one", "/v1/models/m2", nil, "", 200, []string{`"object":"model"`, `"id":"m2"`}},
		{"openai none", "/v1/models/m3", nil, "", 404, []string{`"code":"model_not_found"`}},
		{"anthropic list", "/v1/models", []string{"Anthropic-Version", "2023-06-01"}, "", 200, []string{`"type":"model"`, `"max_input_tokens":8192`, `"has_more":false`, `"last_id":"m2"`}},
		{"anthropic none", "/v1/models/m3", []string{"Anthropic-Version", "2023-06-01"}, "", 404, []string{`"not_found_error"`}},
		{"ollama tags", "/api/tags", nil, "", 200, []string{`"models":[`, `"name":"m1"`, `"name":"m2"`}},
		{"ollama show", "/api/show", nil, `{"model":"m1"}`, 200, []string{`"llama.context_length":8192`, `"general.architecture":"llama"`}},
		{"ollama show, old field", "/api/show", nil, `{"name":"m2"}`, 200, []string{`"llama.context_length":32768`}},
		{"ollama show none", "/api/show", nil, `{"model":"m3"}`, 404, []string{`{"error":"model 'm3' not found"}`}},
	}
	for _, c := range cases {
		var status int
		var body string
		if c.body != "" {
			s, b, _ := post(t, srv, c.path, c.body)
			status, body = s, string(b)
		} else {
			status, body = get(t, srv.URL+c.path, c.header...)
		}
		if status != c.status {
			t.Errorf("%s: status %d, want %d", c.name, status, c.status)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: %s lacks %s", c.name, body, w)
			}
		}
	}
}

func TestKey(t *testing.T) {
	srv := llmtest.NewTest(t, &llmtest.Script{Key: "k1"})
	body := chatPaths[1].body
	if status, b, _ := post(t, srv, "/v1/messages", body, "X-Api-Key", "nope"); status != 401 || !strings.Contains(string(b), "authentication_error") {
		t.Errorf("wrong key: %d %s", status, b)
	}
	if status, _, _ := post(t, srv, "/v1/messages", body, "X-Api-Key", "k1"); status != 200 {
		t.Errorf("x-api-key: %d", status)
	}
	if status, _, _ := post(t, srv, "/api/chat", chatPaths[2].body, "Authorization", "Bearer k1"); status != 200 {
		t.Errorf("bearer: %d", status)
	}
	if status, _ := get(t, srv.URL+"/v1/models"); status != 401 {
		t.Errorf("models without key: %d", status)
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	stream := "data: {\"recorded\":true}\n\ndata: [DONE]\n\n"
	os.WriteFile(filepath.Join(dir, "rec.sse"), []byte(stream), 0o644)
	file := filepath.Join(dir, "script.json")
	os.WriteFile(file, []byte(`{"latency": "1ms", "chunk": 2, "turns": [{"raw_file": "rec.sse"}]}`), 0o644)
	sc, err := llmtest.LoadScript(file)
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewTest(t, sc)
	if _, got, _ := post(t, srv, "/v1/chat/completions", chatPaths[0].body); string(got) != stream {
		t.Errorf("replayed %q, want the recorded file", got)
	}
	for _, bad := range []string{`{"turn": []}`, `{"rules": [{"if": "("}]}`, `{"latency": "soon"}`} {
		os.WriteFile(file, []byte(bad), 0o644)
		sc, err := llmtest.LoadScript(file)
		if err == nil {
			var s *llmtest.Server
			if s, err = llmtest.Start("127.0.0.1:0", sc); err == nil {
				s.Close()
			}
		}
		if err == nil || !strings.Contains(err.Error(), "script.json") && !strings.Contains(err.Error(), "rule 0") {
			t.Errorf("script %s: error %v, want one naming the file or the rule", bad, err)
		}
	}
}

func TestRecordedRequests(t *testing.T) {
	srv := llmtest.NewTest(t, nil)
	post(t, srv, "/v1/messages", `{"model":"c","max_tokens":9,"stream":true,"temperature":0.5,
		"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
		"tools":[{"name":"t","description":"d","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"q"},
		{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"u1","name":"t","input":{"x":1}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":"r","cache_control":{"type":"ephemeral"}}]}]}`,
		"Anthropic-Version", "2023-06-01")
	r := srv.Requests()[0]
	m := r.Messages
	if r.API != "anthropic" || r.Model != "c" || r.System != "sys" || r.MaxTokens != 9 || *r.Temperature != 0.5 || r.CacheMarks != 2 {
		t.Errorf("parsed %+v", r)
	}
	if len(m) != 3 || m[1].Text != "a" || string(m[1].Calls[0].Args) != `{"x":1}` || m[2].Role != "tool" || m[2].CallID != "u1" || m[2].Text != "r" {
		t.Errorf("messages %+v", m)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "t" || r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("tools %+v header %v", r.Tools, r.Header)
	}
}
