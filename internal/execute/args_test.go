package execute

import (
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

func TestBadArgs(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ args, want string }{
		{``, "empty arguments"},
		{`not json`, "invalid character"},
		{`{"steps": [{"code": "echo", "language": "bash"}]} extra`, "trailing data"},
		{`{"steps": []}`, `"steps" is missing or empty`},
		{`{}`, `"steps" is missing or empty`},
		{`{"steps": [{"code": "x", "language": "bash"}], "bogus": 1}`, `unknown key "bogus"`},
		{`{"steps": [{"code": "x", "language": "bash", "shell": true}]}`, `unknown key "shell"`},
		{`{"steps": "echo hi"}`, "steps: want an array"},
		{`{"steps": [{"code": 1, "language": "bash"}]}`, "steps.code: want a string"},
		{`{"steps": [{}]}`, "stage 1: needs code, tool or parallel"},
		{`{"steps": [{"code": "x", "language": "bash", "tool": "t"}]}`, "stage 1: give only one of code, tool and parallel"},
		{`{"steps": [{"language": "bash"}]}`, "stage 1: empty code"},
		{`{"steps": [{"args": ["x"]}]}`, "stage 1: args need a tool"},
		{`{"steps": [{"parallel": []}]}`, "stage 1: empty parallel"},
		{`{"steps": [{"tool": "t", "args": ["` + strings.Repeat("x", 128<<10) + `"]}]}`, "give content on the tool's standard input"},
		{`{"steps": [{"tool": "t", "args": ["a\u0000b"]}]}`, "argument 1 holds a NUL byte"},
		{`{"steps": [{"code": "x", "language": "bash"}], "timeout": -1}`, "timeout must be a positive number"},
		{`{"steps": [{"code": "x", "language": "bash"}], "timeout": 1e12}`, "is more than the limit of 3600 seconds"},
		{`{"steps": [{"code": "x", "language": "bash"}], "timeout": 1e-9}`, "less than a millisecond"},
		{`{"steps": [{"code": "x", "language": "bash", "timeout": 99999}]}`, "stage 1: timeout 99999 is more than the limit"},
		{`{"steps": [{"code": "x", "language": "cobol-9000"}]}`, `unknown language "cobol-9000"`},
		{`{"steps": [{"code": "x", "language": "/bin/sh"}]}`, `bad language name "/bin/sh"`},
		{`{"steps": [{"code": "x", "language": "-e"}]}`, `bad language name "-e"`},
		{`{"steps": [{"parallel": [{"parallel": [{"parallel": [{"parallel": [{"code": "x", "language": "sh"}]}]}]}]}]}`, "nested more than 4 deep"},
		{`{"steps": [` + strings.Repeat(`{"code": "x", "language": "sh"},`, 64) + `{"code": "x", "language": "sh"}]}`, "more than 64 stages"},
	} {
		_, err := f.executor().Run(t.Context(), f.spec(), []byte(tc.args))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.args, err, tc.want)
			continue
		}
		if k := errs.KindOf(err); k != errs.Invalid && k != errs.NotExist {
			t.Errorf("%s: kind %v", tc.args, k)
		}
		if msg := err.Error(); msg != strings.ToLower(msg[:1])+msg[1:] || strings.HasSuffix(msg, ".") {
			t.Errorf("not Plan 9 wording: %q", msg)
		}
	}
}

// Inline code without a language is bash, as the schema says: models
// often leave the field out.
func TestLanguageDefaultsToBash(t *testing.T) {
	f := newFixture(t)
	res, err := f.executor().Run(t.Context(), f.spec(), []byte(`{"steps": [{"code": "echo ${BASH_VERSION:+bash}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.String() != "bash\n" {
		t.Fatalf("got %q, want bash's output", res.String())
	}
}

func TestUnknownPolicy(t *testing.T) {
	f := newFixture(t)
	f.policy = "nosuch"
	_, err := f.executor().Run(t.Context(), f.spec(), []byte(code("sh", "true")))
	if err == nil || !strings.Contains(err.Error(), `unknown sandbox profile "nosuch"`) {
		t.Fatalf("got %v", err)
	}
}

func TestSchemaIsSmall(t *testing.T) {
	// The schema is in every request; keep it within a small budget,
	// estimated at four characters a token.
	tokens := (len(Schema) + len(Description) + 3) / 4
	t.Logf("schema %d + description %d chars: about %d tokens", len(Schema), len(Description), tokens)
	if tokens > 400 {
		t.Errorf("schema and description are about %d tokens, budget 400", tokens)
	}
	if _, err := ParseArgs([]byte(`{"steps":[{"code":"x","language":"sh"}]}`), config.DefaultSandbox()); err != nil {
		t.Fatal(err)
	}
}

// The model sees the stderr of stages that succeed: a warning, and a
// command that failed inside a shell pipeline that succeeded.
func TestStderrOfSucceedingStages(t *testing.T) {
	f := newFixture(t)
	args := `{"steps": [{"code": "echo warning: unused variable >&2; echo out"},` +
		`{"parallel": [{"code": "cat; cat /no/such/file | sort"}, {"code": "true"}]}]}`
	res, err := f.executor().Run(t.Context(), f.spec(), []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	got := res.String()
	for _, want := range []string{"out\n", "stderr of stage 1 (bash):\nwarning: unused variable\n",
		"stderr of stage 2.1 (bash):\ncat: /no/such/file: No such file or directory\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("result lacks %q:\n%s", want, got)
		}
	}
	if res.Failed || strings.Contains(got, "stage 2.2") {
		t.Errorf("unexpected:\n%s", got)
	}
}
