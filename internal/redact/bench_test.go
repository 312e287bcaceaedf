package redact

import (
	"log"
	"strings"
	"testing"
)

func nilLogger(b *strings.Builder) *log.Logger { return log.New(b, "", 0) }

// prose is a KiB of ordinary chat: no secret, many anchor letters.
var prose = strings.Repeat("The assistant ran the tests; a basic task passed, and the token count is 1234. ", 13)[:1024]

func benchRedactor() *Redactor {
	return New("sk-ant-api03-"+strings.Repeat("x", 80), "sk-proj-"+strings.Repeat("y", 120), "ollama-local-key", "tok-9p-0123456789abcdef")
}

func BenchmarkStringClean1KB(b *testing.B) {
	r := benchRedactor()
	b.SetBytes(int64(len(prose)))
	for b.Loop() {
		r.String(prose)
	}
}

func BenchmarkStringDirty1KB(b *testing.B) {
	r := benchRedactor()
	s := prose[:900] + " Authorization: Bearer sk-ant-api03-" + strings.Repeat("x", 80) + prose
	s = s[:1024]
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}

func BenchmarkStringClean64KB(b *testing.B) {
	r := benchRedactor()
	s := strings.Repeat(prose, 64)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"Authorization: Bearer x", "x-api-key: k", "https://u:p@h/", "sk-" + strings.Repeat("a", 30), key, prose[:100]} {
		f.Add(s)
	}
	r := New(key)
	f.Fuzz(func(t *testing.T, s string) {
		out := r.String(s)
		if strings.Contains(out, key) {
			t.Fatalf("key left in %q", out)
		}
		if again := r.String(out); again != out {
			t.Fatalf("not idempotent: %q -> %q", out, again)
		}
		for _, n := range []int{0, 7, 64} {
			c := Cut(s, n)
			if len(c) > n+3 {
				t.Fatalf("Cut(%q, %d) = %q: too long", s, n, c)
			}
			// A whole key in s is never cut to a partial one.
			head := strings.TrimSuffix(c, "...")
			for k := 4; k < len(key) && len(c) < len(s); k++ {
				if strings.HasSuffix(head, key[:k]) && strings.HasPrefix(s[len(head):], key[k:]) {
					t.Fatalf("Cut(%q, %d) = %q splits the key", s, n, c)
				}
			}
		}
		URL(s)
	})
}

// BenchmarkStringPiece is one streamed piece of chat, as Turn.Chat gets it.
func BenchmarkStringPiece(b *testing.B) {
	r := benchRedactor()
	s := prose[:24]
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.String(s)
	}
}
