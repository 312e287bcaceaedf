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
	l.Record(nil, "write", "s/x/cfg", errs.E(errs.Invalid, "temperature=9: want a number from 0 to 2"))
	l.Record(nil, "read", "s/x/wait", errs.E(errs.Interrupted)) // Ctrl-C is not an error
	l.Record(&tree.Principal{Session: "s1"}, "create", "m/bad name", errs.E(errs.Invalid, "bad file name"))
	l.Record(&tree.Principal{Hook: true}, "open", "", errors.New("multi\nline\ttext\x00"))
	got, _ := l.render()
	want := "2026-12-01T10:00:00.000Z user write s/x/cfg: bad request: temperature=9: want a number from 0 to 2\n" +
		"2026-12-01T10:00:00.000Z stage:s1 create \"m/bad name\": bad request: bad file name\n" +
		"2026-12-01T10:00:00.000Z hook open /: multi line text \n"
	if string(got) != want {
		t.Errorf("errors =\n%s\nwant\n%s", got, want)
	}
	if l.size() != int64(len(want)) || l.vers.Load() != 3 {
		t.Errorf("size %d, version %d; want %d, 3", l.size(), l.vers.Load(), len(want))
	}
	if len(logged) != 3 || logged[0] != "tree: user write s/x/cfg: bad request: temperature=9: want a number from 0 to 2" {
		t.Errorf("daemon log = %q", logged)
	}
}

// The ring keeps the last ErrorLogSize errors, oldest first, and its
// size stays true as old lines fall out.
func TestErrorLogRing(t *testing.T) {
	l := testLog(nil)
	for i := range ErrorLogSize + 37 {
		l.Record(nil, "write", "m/f", errors.New(strings.Repeat("x", i%7)+fmt.Sprint(i)))
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
	l.Record(nil, "open", "s/x/models", errors.New("unavailable: 401 invalid x-api-key sk-ant-0123456789abcdef; Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload api_key=SECRETSECRET99"))
	l.Record(nil, "write", "m/f", errors.New(strings.Repeat("é", 2000)))
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

// Model code refused over and over cannot push the user's errors out of
// the file, nor flood the daemon's log.
func TestErrorLogStagesApart(t *testing.T) {
	var logged []string
	l := testLog(func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
	stage := &tree.Principal{Session: "s1"}
	l.Record(nil, "write", "s/x/cfg", errors.New("the user's"))
	for i := range 1000 {
		l.Record(stage, "open", "a/default.json", errs.E(errs.Permission, fmt.Sprint("try ", i)))
	}
	l.Record(nil, "write", "s/x/env", errors.New("the user's again"))
	got, _ := l.render()
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != ErrorLogSize+2 || !strings.Contains(lines[0], "the user's") || !strings.Contains(lines[len(lines)-1], "the user's again") ||
		!strings.Contains(lines[1], "stage:s1 open a/default.json: permission denied: try 900") {
		t.Errorf("%d lines: %q ... %q", len(lines), lines[:2], lines[len(lines)-1])
	}
	if len(logged) != stageLogBudget+2 {
		t.Errorf("%d lines logged, want the user's 2 and %d of the stage's", len(logged), stageLogBudget)
	}
	l.now = func() time.Time { return time.Date(2026, 12, 1, 10, 1, 0, 0, time.UTC) }
	l.Record(stage, "open", "x/elevate", errs.E(errs.Permission))
	if n := len(logged); n != stageLogBudget+4 || logged[n-2] != "tree: 940 more errors of stages not logged (see errors)" {
		t.Errorf("a minute later the log says %q", logged[len(logged)-2:])
	}
}

// A write that voids its message and the commit that then fails are one
// failure: one line.
func TestErrorLogOneLinePerFailure(t *testing.T) {
	l := testLog(nil)
	werr := errs.E(errs.Invalid, "temperature=9: want a number from 0 to 2")
	l.Record(nil, "write", "s/x/cfg", werr)
	l.Record(nil, "commit", "s/x/cfg", errs.E(errs.Invalid, "nothing sent: "+werr.Error()))
	l.Record(nil, "commit", "s/y/cfg", errs.E(errs.Invalid, "nothing sent: "+werr.Error()))
	got, _ := l.render()
	if n := strings.Count(string(got), "\n"); n != 2 || !strings.Contains(string(got), "s/y/cfg") {
		t.Errorf("errors =\n%s", got)
	}
}
