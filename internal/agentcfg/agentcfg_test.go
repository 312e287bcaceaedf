package agentcfg

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	a, err := Parse([]byte(`{"model":"m","max_steps":3,"temperature":0.2,"prompt":[{"file":"base.md"},{"exec":"x/prime {{agent}}"}],
		"hooks":{"preTool":["true"]},"sandbox":"readonly","compact_at":0.7}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Model != "m" || a.MaxSteps != 3 || *a.Temperature != 0.2 || len(a.Prompt) != 2 || a.Sandbox != "readonly" {
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
