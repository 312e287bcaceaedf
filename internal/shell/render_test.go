package shell

import (
	"strings"
	"testing"
)

const chatTurn = "user: list the files\nand be brief\n" +
	"assistant: Let me look.\n" +
	`-> execute_code({"steps":[{"code":"ls -l\nwc -l *","language":"bash"},{"tool":"grep","args":["-n","x"]}]})` + "\n" +
	"a\nb\nc\nd\ne\nf\n" +
	"assistant: There are six files:\na to f.\n" +
	":: compacted the history\n" +
	"error: rate limited\n"

const rendered = "Let me look.\n" +
	"⚙ bash: ls -l … | grep -n x\n" +
	"  │ a\n  │ b\n  │ c\n  │ d\n  │ … 2 more lines\n" +
	"There are six files:\na to f.\n" +
	":: compacted the history\n" +
	"error: rate limited\n"

// TestRenderInPieces feeds a turn's chat in pieces of every size: what is
// shown does not depend on how the chat arrived.
func TestRenderInPieces(t *testing.T) {
	for size := 1; size <= len(chatTurn); size++ {
		var b strings.Builder
		r := &renderer{w: &b, maxOutput: 4, skip: true}
		for i := 0; i < len(chatTurn); i += size {
			r.Write([]byte(chatTurn[i:min(i+size, len(chatTurn))]))
		}
		r.Flush()
		if b.String() != rendered {
			t.Fatalf("in pieces of %d:\n%s\nwant:\n%s", size, b.String(), rendered)
		}
	}
}

// TestRenderStreamsText: the reply shows before its line is complete;
// other lines wait for their end.
func TestRenderStreamsText(t *testing.T) {
	var b strings.Builder
	r := &renderer{w: &b, maxOutput: 4}
	r.Write([]byte("assistant: Hel"))
	if b.String() != "Hel" {
		t.Errorf("after a partial reply: %q", b.String())
	}
	r.Write([]byte("lo\n-> execute_code({}"))
	if b.String() != "Hello\n" {
		t.Errorf("after a partial tool call: %q", b.String())
	}
	r.Write([]byte(")\nassistant: ok"))
	r.Flush()
	if want := "Hello\n⚙ execute_code({})\nok\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// TestRenderOthersPrompts: prompts this shell did not write (queued ones,
// another client's) are shown; a stopped turn's note starts a new line.
func TestRenderOthersPrompts(t *testing.T) {
	var b strings.Builder
	r := &renderer{w: &b, maxOutput: 4, color: true}
	r.Write([]byte("user: from elsewhere\nassistant: partial"))
	r.Write([]byte("\n:: stopped\n"))
	r.Flush()
	want := dim + "» from elsewhere" + reset + "\npartial\n" + yellow + ":: stopped" + reset + "\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestSummarizeCall(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`execute_code({"steps":[{"code":"echo hi","language":"sh"}]})`, "sh: echo hi"},
		{`execute_code({"steps":[{"parallel":[{"tool":"a"},{"code":"b"}]},{"code":"jq .","language":"jq"}]})`, "{ a & b } | jq: jq ."},
		{`execute_code({"steps":[{"code":"x` + strings.Repeat("y", 500) + `...`, `execute_code({"steps":[{"code":"x` + strings.Repeat("y", 500) + `...`},
		{`other_tool({"a":1})`, `other_tool({"a":1})`},
	} {
		if got := summarizeCall(c.line); got != c.want {
			t.Errorf("summarizeCall(%q) = %q, want %q", c.line, got, c.want)
		}
	}
	r := &renderer{width: func() int { return 20 }}
	if got := r.fit("0123456789abcdefghijklmnop", 2); got != "0123456789abcdefg…" {
		t.Errorf("fit = %q", got)
	}
}
