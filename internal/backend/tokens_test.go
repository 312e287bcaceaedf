package backend_test

import (
	"strings"
	"testing"

	"ollie.dev/ollie/internal/backend"
)

func TestEstimateTokens(t *testing.T) {
	// Approximate counts of the cl100k tokenizer for these strings; the
	// estimate must stay within 35% on each and within 15% overall.
	cases := []struct {
		s    string
		real int
	}{
		{"Hello world", 2},
		{"hello, world!", 4},
		{"The quick brown fox jumps over the lazy dog.", 10},
		{"func main() {\n\tfmt.Println(\"hi\")\n}\n", 12},
		{`{"steps":[{"code":"ls -la","language":"bash"}]}`, 16},
		{"Internationalization and localization are distinct processes.", 9},
		{strings.Repeat("word ", 100), 100},
	}
	var est, real int
	for _, c := range cases {
		n := backend.EstimateTokens(c.s)
		est += n
		real += c.real
		if lo, hi := float64(c.real)*0.65, float64(c.real)*1.35+1; float64(n) < lo || float64(n) > hi {
			t.Errorf("EstimateTokens(%q) = %d, real %d", c.s, n, c.real)
		}
	}
	if r := float64(est) / float64(real); r < 0.85 || r > 1.15 {
		t.Errorf("overall estimate %d for %d real tokens", est, real)
	}
	if backend.EstimateTokens("") != 0 {
		t.Errorf("empty string has tokens")
	}
	// Characters/4 would make this 3; a tokenizer needs several.
	if n := backend.EstimateTokens("日本語の文章です"); n < 4 {
		t.Errorf("CJK text estimated at %d tokens", n)
	}
}

func TestEstimateRequest(t *testing.T) {
	short := &backend.Request{System: "be brief", Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}
	long := &backend.Request{System: "be brief", Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"},
		{Role: backend.RoleAssistant, Calls: []backend.ToolCall{{ID: "1", Name: "execute_code", Args: []byte(`{"steps":[]}`)}}},
		{Role: backend.RoleTool, CallID: "1", Text: strings.Repeat("output line\n", 50)}},
		Tools: []backend.Tool{executeCode}}
	s, l := backend.EstimateRequest(short), backend.EstimateRequest(long)
	if s <= 0 || l < s+100 {
		t.Errorf("estimates %d and %d: want the longer request to count its messages and tools", s, l)
	}
}
