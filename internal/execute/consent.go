package execute

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"ollie.dev/ollie/internal/errs"
)

// Consent decides whether a stage may leave the sandbox. The session code
// backs it with the files of s/<id>/ask/; ollie exec with a directory.
//
// Ask blocks until there is an answer, ctx is done, or the implementation
// gives up (which is a Deny, not an error). It may be called from several
// goroutines at once, one per parallel branch.
type Consent interface {
	Ask(ctx context.Context, req Request) (Decision, error)
}

// A Decision is the answer to a Request.
type Decision int

const (
	Deny Decision = iota
	Allow
)

// Request describes an elevated stage.
type Request struct {
	Session  string
	Stage    string // "2", or "3.1" for a branch
	Cwd      string
	Policy   string // the sandbox profile the stage would leave
	Language string // with Code, for inline code
	Code     string
	Tool     string // with Args, for a named tool
	Args     []string
}

// String is the request as a person reads it.
func (q Request) String() string {
	var b strings.Builder
	b.WriteString("execute_code asks to run a stage outside the sandbox, as you, with no limits\n")
	b.WriteString("asked by: the model (code it wrote; it may have been steered by what it read)\n")
	if q.Session != "" {
		fmt.Fprintf(&b, "session: %s\n", q.Session)
	}
	if q.Policy != "" {
		fmt.Fprintf(&b, "policy: %s (what it runs under now)\n", q.Policy)
	}
	fmt.Fprintf(&b, "stage: %s\ncwd: %s\n", q.Stage, q.Cwd)
	if q.Tool != "" {
		fmt.Fprintf(&b, "tool: %s\nargs:", q.Tool)
		for _, a := range q.Args {
			b.WriteString(" " + strconv.Quote(a))
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "language: %s\ncode:\n%s\n", q.Language, strings.TrimRight(q.Code, "\n"))
	}
	// The answer is read from the last line, so the file must not end in
	// a line of the code that happens to say allow.
	b.WriteString("---\nwrite allow or deny into this file\n")
	return b.String()
}

// sameCommand reports whether stage st is exactly the preapproved p.
func sameCommand(p, st Stage) bool {
	if p.Tool != "" || st.Tool != "" {
		return p.Tool == st.Tool && slices.Equal(p.Args, st.Args)
	}
	return p.Language == st.Language && strings.TrimSpace(p.Code) == strings.TrimSpace(st.Code)
}

// DirConsent asks through files in a directory: each request is a new file
// there, describing it; a person answers by writing allow or deny into it
// (overwriting or appending). No answer within Timeout is a denial. The
// file is removed once answered.
type DirConsent struct {
	Dir     string
	Timeout time.Duration
	// Poll is how often the file is read; 100ms if zero.
	Poll time.Duration
}

var _ Consent = (*DirConsent)(nil)

// Ask implements Consent.
func (d *DirConsent) Ask(ctx context.Context, req Request) (Decision, error) {
	path, err := d.post(req)
	if err != nil {
		return Deny, err
	}
	defer os.Remove(path)
	poll := d.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	deadline := time.NewTimer(d.Timeout)
	defer deadline.Stop()
	for {
		if dec, ok := answer(path); ok {
			return dec, nil
		}
		select {
		case <-ctx.Done():
			return Deny, errs.E(errs.Interrupted, "consent")
		case <-deadline.C:
			return Deny, nil
		case <-tick.C:
		}
	}
}

// post writes the request under a fresh name, whole: it appears by rename,
// so a watcher never reads half of it.
func (d *DirConsent) post(req Request) (string, error) {
	f, err := os.CreateTemp(d.Dir, ".elevate-*")
	if err != nil {
		return "", errs.E(errs.Other, "consent", err)
	}
	_, err = f.WriteString(req.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(d.Dir, strings.TrimPrefix(filepath.Base(f.Name()), "."))
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", errs.E(errs.Other, "consent", err)
	}
	return path, nil
}

// answer reads the decision from the last non-empty line of path.
func answer(path string) (Decision, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Deny, os.IsNotExist(err) // removed by hand: a refusal
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	switch strings.ToLower(strings.TrimSpace(string(lines[len(lines)-1]))) {
	case "allow":
		return Allow, true
	case "deny":
		return Deny, true
	}
	return Deny, false
}
