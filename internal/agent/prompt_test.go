package agent

import (
	"math/rand/v2"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/backend"
)

// expand substitutes as a strings.Replacer of every variable does, on
// texts made of the pieces a prompt part is made of, variables, braces
// and words.
func TestExpandAsAReplacer(t *testing.T) {
	vals := map[string]string{"cwd": "/home/u/p", "id": "abc", "tools": "t1: one\nt2: {{cwd}}\n", "empty": ""}
	v := promptVars(func(name string) (string, bool) { val, ok := vals[name]; return val, ok })
	var pairs []string
	for k, val := range vals {
		pairs = append(pairs, "{{"+k+"}}", val)
	}
	want := strings.NewReplacer(pairs...)
	pieces := []string{"{{cwd}}", "{{id}}", "{{tools}}", "{{empty}}", "{{nosuch}}", "{{", "}}", "{", "}", "{{{", "cwd", "id", " ", "\n", "x", "{{c", "wd}}", "é"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		if got, exp := v.expand(text), want.Replace(text); got != exp {
			t.Fatalf("expand(%q) = %q, want %q", text, got, exp)
		}
	}
	for _, text := range []string{"", "no variables", "{{cwd}}", "a{{{cwd}}}b", "{{ {{cwd}}", "{{cwd}}{{id}}", "{{tools}}"} {
		if got, exp := v.expand(text), want.Replace(text); got != exp {
			t.Errorf("expand(%q) = %q, want %q", text, got, exp)
		}
	}
}

// joinParts joins as the loop it replaced did, for parts that end with
// a blank line, a newline or none, empty ones, with and without the
// fenced-block instructions.
func TestJoinParts(t *testing.T) {
	old := func(parts []string, fenced bool) string {
		var b strings.Builder
		for _, p := range parts {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
				b.WriteString("\n")
			}
			b.WriteString(p)
		}
		if fenced {
			b.WriteString("\n" + backend.FencedInstructions)
		}
		return b.String()
	}
	pieces := []string{"", "a", "a\n", "a\n\n", "\n", "\n\n", "b c"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		parts := make([]string, 1+rng.IntN(4))
		for i := range parts {
			parts[i] = pieces[rng.IntN(len(pieces))]
		}
		for _, fenced := range []bool{false, true} {
			in := append([]string(nil), parts...)
			if got, want := joinParts(in, fenced), old(parts, fenced); got != want {
				t.Fatalf("joinParts(%q, %v) = %q, want %q", parts, fenced, got, want)
			}
		}
	}
}
