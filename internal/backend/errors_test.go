package backend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/llmtest"
)

// Error responses of the real servers, as they send them, and how each
// must be classified for the agent loop's retry decision.
var errorBodies = []struct {
	name, kind string
	status     int
	body       string
	headers    map[string]string
	want       errs.Kind
	overflow   bool
	retry      time.Duration
}{
	{"openai overflow", config.KindOpenAI, 400,
		`{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		nil, errs.TooLarge, true, 0},
	{"vllm overflow, error at top level", config.KindOpenAI, 400,
		`{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
		nil, errs.TooLarge, true, 0},
	{"llama.cpp overflow", config.KindOpenAI, 400,
		`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
		nil, errs.TooLarge, true, 0},
	{"openai quota is not a rate limit", config.KindOpenAI, 429,
		`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		nil, errs.Permission, false, 0},
	{"openai retry-after-ms", config.KindOpenAI, 429,
		`{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29850, Requested 1200. Please try again in 1.5s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
		map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, errs.RateLimited, false, 1500 * time.Millisecond},
	{"openai gateway timeout", config.KindOpenAI, 504, `upstream request timeout`, nil, errs.Unavailable, false, 0},
	{"anthropic overflow", config.KindAnthropic, 400,
		`{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 198000 + 8192 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"},"request_id":"req_011CQ"}`,
		nil, errs.TooLarge, true, 0},
	{"anthropic overloaded", config.KindAnthropic, 529,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CR"}`,
		nil, errs.Unavailable, false, 0},
	{"anthropic not found", config.KindAnthropic, 404,
		`{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"},"request_id":"req_011CS"}`,
		nil, errs.NotExist, false, 0},
	{"ollama model without tools", config.KindOllama, 400,
		`{"error":"registry.ollama.ai/library/gemma3:4b does not support tools"}`, nil, errs.Unsupported, false, 0},
	{"ollama model not pulled", config.KindOllama, 404,
		`{"error":"model \"llama9\" not found, try pulling it first"}`, nil, errs.NotExist, false, 0},
	{"ollama overflow", config.KindOllama, 400,
		`{"error":"input length exceeds maximum context length"}`, nil, errs.TooLarge, true, 0},
	{"ollama retry-after date", config.KindOllama, 503,
		`{"error":"server busy, please try again.  maximum pending requests exceeded"}`,
		map[string]string{"Retry-After": "Wed, 21 Oct 2105 07:28:00 GMT"}, errs.Unavailable, false, -1},
}

func TestErrorBodies(t *testing.T) {
	for _, c := range errorBodies {
		t.Run(c.name, func(t *testing.T) {
			turn := llmtest.Turn{Status: c.status, Raw: c.body, Headers: c.headers}
			sc := &llmtest.Script{Turns: []llmtest.Turn{turn}}
			if c.kind == config.KindOllama {
				sc.Models = []llmtest.Model{{ID: testModel}}
			}
			b, _ := newPair(t, c.kind, sc)
			_, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}, nil)
			if !errs.Is(err, c.want) || backend.IsContextOverflow(err) != c.overflow {
				t.Fatalf("%v: kind %v overflow %v, want %v %v", err, errs.KindOf(err), backend.IsContextOverflow(err), c.want, c.overflow)
			}
			d, ok := backend.RetryAfter(err)
			switch {
			case c.retry < 0 && (!ok || d < 50*365*24*time.Hour):
				t.Errorf("RetryAfter = %v %v, want the time until the date", d, ok)
			case c.retry >= 0 && d != c.retry:
				t.Errorf("RetryAfter = %v %v, want %v", d, ok, c.retry)
			}
			if msg := err.Error(); strings.ToLower(msg[:1]) != msg[:1] || !strings.Contains(msg, "test-"+c.kind) {
				t.Errorf("message %q: want lower case, naming the backend", msg)
			}
		})
	}
}
