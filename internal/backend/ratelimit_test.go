package backend_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/llmtest"
)

// The providers' rate-limit reset headers set the wait when there is no
// Retry-After: OpenAI and Groq send durations, Anthropic RFC 3339 times,
// OpenRouter Unix milliseconds. Only exhausted limits count.
func TestRateLimitResetHeaders(t *testing.T) {
	soon := time.Now().Add(40 * time.Second)
	cases := []struct {
		name, kind string
		headers    map[string]string
		min, max   time.Duration
	}{
		{"openai", config.KindOpenAI, map[string]string{
			"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m20s",
			"x-ratelimit-remaining-tokens": "149000", "x-ratelimit-reset-tokens": "6h0m0s", // not exhausted
		}, 80 * time.Second, 80 * time.Second},
		{"anthropic", config.KindAnthropic, map[string]string{
			"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": soon.UTC().Format(time.RFC3339),
		}, 30 * time.Second, 41 * time.Second},
		{"openrouter", config.KindOpenAI, map[string]string{
			"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strings.TrimSpace(itoa(soon.UnixMilli())),
		}, 30 * time.Second, 41 * time.Second},
		{"retry-after wins", config.KindOpenAI, map[string]string{
			"Retry-After": "3", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m",
		}, 3 * time.Second, 3 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := newPair(t, c.kind, &llmtest.Script{Turns: []llmtest.Turn{{Status: 429, Headers: c.headers}}})
			_, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}, nil)
			if !errs.Is(err, errs.RateLimited) {
				t.Fatalf("err %v, want a rate limit", err)
			}
			wait, ok := backend.RetryAfter(err)
			if !ok || wait < c.min || wait > c.max {
				t.Fatalf("wait %v (%v), want %v..%v", wait, ok, c.min, c.max)
			}
		})
	}
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// OpenRouter puts the status in the error's code: the text says it once.
func TestRateLimitTextOnce(t *testing.T) {
	body := `{"error":{"message":"Rate limit exceeded: free-models-per-min. ","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"20"}}},"user_id":"user_2x"}`
	b, _ := newPair(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{{Status: 429, Raw: body}}})
	_, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}, nil)
	if !errs.Is(err, errs.RateLimited) {
		t.Fatalf("err %v", err)
	}
	if msg := err.Error(); strings.Count(msg, "429") != 1 || !strings.Contains(msg, "Rate limit exceeded") {
		t.Fatalf("error text %q, want the status once and the message", msg)
	}
}

// A backend where nothing listens fails at once, saying where and what
// to do; the error is marked so the agent does not retry it.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, kind := range []string{config.KindOpenAI, config.KindAnthropic, config.KindOllama} {
		for _, url := range []string{"http://" + addr, "http://ollie-no-such-host.invalid:11434"} {
			b, err := backend.New(config.Backend{Name: "dead", Kind: kind, BaseURL: url, Model: "m"}, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}, nil)
			t.Logf("%s %s: %v after %v", kind, url, err, time.Since(start).Round(time.Millisecond))
			if !backend.IsUnreachable(err) || !errs.Is(err, errs.Unavailable) {
				t.Fatalf("%s %s: err %v, want unreachable", kind, url, err)
			}
			if msg := err.Error(); !strings.Contains(msg, strings.TrimSuffix(url, "/")) || !strings.Contains(msg, "ollama serve") ||
				!strings.Contains(msg, "ollie.json") {
				t.Fatalf("%s: error %q does not name the address and the fix", kind, msg)
			}
		}
	}
}
