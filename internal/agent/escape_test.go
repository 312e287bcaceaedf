package agent

import "testing"

func TestEscapeControls(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":             "plain\ttext\n",
		"\x1b[2J\x1b]0;pwned\x07ok": `\x1b[2J\x1b]0;pwned\x07ok`,
		"caf\xe9 \u009b31m":         `caf\xe9 \u009b31m`,
		"del\x7f, cr\r":             `del\x7f, cr\x0d`,
		"日本語":                       "日本語",
	} {
		if got := EscapeControls(in); got != want {
			t.Errorf("EscapeControls(%q) = %q, want %q", in, got, want)
		}
	}
}
