package ns

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

func testLog(logf func(string, ...any), secrets ...string) *ErrorLog {
	l := NewErrorLog(logf, secrets)
	l.now = func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
	l.vers = new(tree.Version)
	return l
}

func TestErrorLogLines(t *testing.T) {
	var logged []string
	l := testLog(func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
	l.Record("write", "s/x/cfg", errs.E(errs.Invalid, "temperature=9: want a number from 0 to 2"))
	l.Record("read", "s/x/wait", errs.E(errs.Interrupted)) // Ctrl-C is not an error
	l.Record("create", "m/bad name", errs.E(errs.Invalid, "bad file name"))
	l.Record("open", "", errors.New("multi\nline\ttext\x00"))
	got, _ := l.render()
	want := "2026-12-01T10:00:00.000Z write s/x/cfg: bad request: temperature=9: want a number from 0 to 2\n" +
		"2026-12-01T10:00:00.000Z create \"m/bad name\": bad request: bad file name\n" +
		"2026-12-01T10:00:00.000Z open /: multi line text \n"
	if string(got) != want {
		t.Errorf("errors =\n%s\nwant\n%s", got, want)
	}
	if l.size() != int64(len(want)) || l.vers.Load() != 3 {
		t.Errorf("size %d, version %d; want %d, 3", l.size(), l.vers.Load(), len(want))
	}
	if len(logged) != 3 || logged[0] != "tree: write s/x/cfg: bad request: temperature=9: want a number from 0 to 2" {
		t.Errorf("daemon log = %q", logged)
	}
}

// The ring keeps the last ErrorLogSize errors, oldest first, and its
// size stays true as old lines fall out.
func TestErrorLogRing(t *testing.T) {
	l := testLog(nil)
	for i := range ErrorLogSize + 37 {
		l.Record("write", "m/f", errors.New(strings.Repeat("x", i%7)+fmt.Sprint(i)))
	}
	got, _ := l.render()
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != ErrorLogSize || !strings.HasSuffix(lines[0], "37") || !strings.HasSuffix(lines[ErrorLogSize-1], fmt.Sprint(ErrorLogSize+36)) {
		t.Errorf("%d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if l.size() != int64(len(got)) {
		t.Errorf("size %d, content %d", l.size(), len(got))
	}
}

// No key reaches the file or the log: the configured ones by value,
// bearer tokens and api keys by shape. Messages stay bounded.
func TestErrorLogRedacts(t *testing.T) {
	var logged string
	l := testLog(func(f string, a ...any) { logged += fmt.Sprintf(f, a...) }, "sk-ant-0123456789abcdef", "ab")
	l.Record("open", "s/x/models", errors.New("unavailable: 401 invalid x-api-key sk-ant-0123456789abcdef; Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload api_key=SECRETSECRET99"))
	l.Record("write", "m/f", errors.New(strings.Repeat("é", 2000)))
	got, _ := l.render()
	for _, leak := range []string{"0123456789abcdef", "eyJhbGci", "SECRETSECRET99"} {
		if strings.Contains(string(got), leak) || strings.Contains(logged, leak) {
			t.Errorf("errors or the log shows %q:\n%s\n%s", leak, got, logged)
		}
	}
	// A two-byte "secret" would blank every "ab": too short to redact.
	if !strings.Contains(string(got), "(secret)") || !strings.Contains(string(got), "unavailable") {
		t.Errorf("errors = %s", got)
	}
	second := strings.Split(string(got), "\n")[1]
	if len(second) > maxErrorText+80 || !strings.HasSuffix(second, "...") || !strings.Contains(second, "é") {
		t.Errorf("long message kept as %d bytes: %.80q", len(second), second)
	}
}
