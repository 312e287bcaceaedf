package defaults_test

import (
	"strings"
	"testing"
)

// Content too large for an argument (over Linux's 128 KiB a string) goes
// through stdin to every tool that takes content.
func TestLargeContentOnStdin(t *testing.T) {
	f := newFiles(t)
	big := "python3 -c \"import sys; sys.stdout.write(''.join('line %d of a big file\\n' % i for i in range(20000)))\""
	ok(t, f.run("", code("sh", big), tool("file_write", "big.txt")), "created big.txt: 488890 bytes")
	edit := `python3 -c "import json; print(json.dumps({'old': 'line 7 of a big file', 'new': 'x' * 300000}))"`
	ok(t, f.run("", code("sh", edit), tool("file_edit", "big.txt")), "edited big.txt: 1 replacement", "[... ")
	if got := f.read("big.txt"); !strings.Contains(got, "\n"+strings.Repeat("x", 300000)+"\n") {
		t.Errorf("the large edit did not land (%d bytes)", len(got))
	}
	ok(t, f.run("", code("sh", "seq 1 50000 | tr '\\n' ' '"), tool("reasoning_think")), "thought noted (50000 words)")
}
