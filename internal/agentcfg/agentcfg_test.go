package agentcfg

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	a, err := Parse([]byte(`{"model":"m","max_steps":3,"temperature":0.2,"prompt":[{"file":"base.md"},{"exec":"x/prime {{agent}}"}],
		"hooks":{"preTool":["true"]},"sandbox":"readonly","compact_at":0.7,"reasoning":"high","reasoning_budget":16000}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Model != "m" || a.MaxSteps != 3 || *a.Temperature != 0.2 || len(a.Prompt) != 2 || a.Sandbox != "readonly" ||
		a.Reasoning != "high" || a.ReasoningBudget != 16000 {
		t.Errorf("parsed %+v", a)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"modle":"m"}`, `unknown field "modle"`},
		{`{"max_steps":"3"}`, "max_steps"},
		{`{"max_steps":-1}`, "max_steps"},
		{`{"temperature":3}`, "temperature"},
		{`{"compact_at":0.99}`, "compact_at"},
		{`{"prompt":[{}]}`, "exactly one of file or exec"},
		{`{"prompt":[{"file":"a/b"}]}`, "must be a name in p/"},
		{`{"hooks":{"onStart":["x"]}}`, "unknown event"},
		{`{"hooks":{"preTool":[" "]}}`, "empty command"},
		{`{"backend":"no spaces"}`, "bad name"},
		{`{"pass_env":["GITHUB TOKEN"]}`, "pass_env: bad variable name"},
		{`{"reasoning":"max"}`, `reasoning: "max" is not one of off, low, medium, high`},
		{`{"reasoning":"HIGH"}`, `reasoning: "HIGH" is not one of`},
		{`{"reasoning":true}`, "reasoning"},
		{`{"reasoning":"high\u0000"}`, "reasoning"},
		{`{"reasoning_budget":100}`, "reasoning_budget: 100 is outside 1024..1048576"},
		{`{"reasoning_budget":-5}`, "reasoning_budget"},
		{`{"reasoning_budget":"8000"}`, "reasoning_budget"},
		{`{"reasoning_budget":1e12}`, "reasoning_budget"},
		{`{"reasoning":"off","reasoning_budget":4096}`, "budget with reasoning off"},
		{`{} []`, "trailing data"},
		{`nonsense`, "invalid character"},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.in, err, c.want)
		}
	}
	for _, in := range []string{``, `{"model":`, `{"prompt":[{"file":"x"`} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrIncomplete) {
			t.Errorf("Parse(%q) = %v, want ErrIncomplete", in, err)
		}
	}
}

// Bytes that are not text fail, instead of being replaced by U+FFFD.
func TestParseText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{\"description\":\"caf\xe9\"}", "not UTF-8 text"},
		{"{\"model\":\"m\x00\"}", "NUL byte"},
		{`{"model":"m\u0000x"}`, "model: NUL character"},
		{`{"hooks":{"preTool":["true\u0000; rm -rf /"]}}`, "hooks.preTool: NUL"},
		{`{"prompt":[{"exec":"x/prime\u0000"}]}`, "prompt[0]: NUL"},
	} {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want %q", c.in, err, c.want)
		}
	}
	// A rune cut by the end of a write is unfinished, not wrong.
	if _, err := Parse([]byte("{\"description\":\"\xe2\x9c")); !errors.Is(err, ErrIncomplete) {
		t.Errorf("Parse(cut rune) = %v, want ErrIncomplete", err)
	}
}

func TestCheckRefs(t *testing.T) {
	parts := map[string]bool{"base.md": true}
	r := Refs{Backends: []string{"local", "claude"}, Profiles: []string{"workspace", "readonly"},
		Part: func(n string) bool { return parts[n] }, Parts: func() []string { return []string{"base.md"} }}
	ok, _ := Parse([]byte(`{"backend":"local","sandbox":"readonly","prompt":[{"file":"base.md"},{"exec":"x/prime"}]}`))
	if err := ok.CheckRefs(r); err != nil {
		t.Errorf("CheckRefs of a good config: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"backend":"nope"}`, `backend: no backend "nope" (configured: claude, local)`},
		{`{"sandbox":"yolo"}`, `sandbox: no profile "yolo" (profiles: readonly, workspace)`},
		{`{"prompt":[{"file":"base.md"},{"file":"gone.md"}]}`, `prompt[1]: no prompt part p/gone.md (p/ holds: base.md)`},
	} {
		a, err := Parse([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.CheckRefs(r); err == nil || err.Error() != c.want {
			t.Errorf("CheckRefs(%s) = %v, want %q", c.in, err, c.want)
		}
	}
	a, _ := Parse([]byte(`{"backend":"any","sandbox":"any"}`))
	if err := a.CheckRefs(Refs{}); err != nil {
		t.Errorf("CheckRefs with nothing to check: %v", err)
	}
	if err := a.CheckRefs(Refs{Backends: []string{}}); err == nil || !strings.Contains(err.Error(), "(configured: none)") {
		t.Errorf("CheckRefs with no backend configured: %v", err)
	}
}

// FuzzParse: whatever the bytes, Parse returns a checked Agent or an
// error, and an accepted document is UTF-8 text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"model":"m"}`, `{"prompt":[{"file":"base.md"}]}`, "{\"model\":\"\xff\"}", `{"hooks":{"preTool":["x"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Parse(b)
		if err != nil {
			return
		}
		if !utf8.Valid(b) || a.check() != nil {
			t.Fatalf("Parse accepted %q", b)
		}
	})
}
