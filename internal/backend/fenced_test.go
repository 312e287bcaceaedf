package backend_test

import (
	"strings"
	"testing"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/errs"
)

func TestParseFencedToolCalls(t *testing.T) {
	cases := []struct {
		name, text string
		args       []string // the calls' arguments, in order
		bad        string   // part of the error, if any
	}{
		{"language form", "Let me look.\n\n```execute_code bash\nls -l\n```\n",
			[]string{`{"steps":[{"code":"ls -l\n","language":"bash"}]}`}, ""},
		{"json form", "```execute_code\n{\"steps\": [{\"code\": \"print(1)\", \"language\": \"python3\"}],\n \"timeout\": 5}\n```",
			[]string{`{"steps":[{"code":"print(1)","language":"python3"}],"timeout":5}`}, ""},
		{"two calls, tildes, indent", "  ~~~~execute_code sh\necho a\n~~~~\ntext\n```execute_code python3\nprint(2)\n```\n",
			[]string{`{"steps":[{"code":"echo a\n","language":"sh"}]}`, `{"steps":[{"code":"print(2)\n","language":"python3"}]}`}, ""},
		{"plain bash is shown, not run", "```bash\nrm -rf /\n```\n", nil, ""},
		{"example inside a longer fence", "````markdown\n```execute_code bash\nls\n```\n````\n", nil, ""},
		{"closing fence must be as long", "````execute_code bash\necho ```\n```\nstill code\n````\n",
			[]string{`{"steps":[{"code":"echo ` + "```" + `\n` + "```" + `\nstill code\n","language":"bash"}]}`}, ""},
		{"bad json is reported, good calls kept", "```execute_code\n{steps: oops}\n```\n```execute_code bash\npwd\n```\n",
			[]string{`{"steps":[{"code":"pwd\n","language":"bash"}]}`}, "block 1: arguments are not a json object"},
		{"unterminated", "```execute_code bash\nls\n", nil, "no closing fence"},
		{"no blocks", "just prose", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls, err := backend.ParseFencedToolCalls(c.text)
			if c.bad == "" && err != nil || c.bad != "" && (!errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), c.bad)) {
				t.Errorf("error %v, want one saying %q", err, c.bad)
			}
			if len(calls) != len(c.args) {
				t.Fatalf("got %d calls %+v, want %d", len(calls), calls, len(c.args))
			}
			for i, call := range calls {
				if call.Name != "execute_code" || call.ID != "fenced_"+string(rune('1'+i)) || string(call.Args) != c.args[i] {
					t.Errorf("call %d = %s %s %s, want execute_code %s", i, call.ID, call.Name, call.Args, c.args[i])
				}
			}
		})
	}
}

func TestFencedInstructionsParse(t *testing.T) {
	// The examples the instructions show a model must themselves parse.
	calls, err := backend.ParseFencedToolCalls(backend.FencedInstructions)
	if err != nil || len(calls) != 2 {
		t.Errorf("instructions yield %d calls, %v; want their 2 examples", len(calls), err)
	}
}
