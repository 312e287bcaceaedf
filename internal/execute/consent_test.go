package execute

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// elevated reads the fake key: it can only succeed outside the sandbox.
func (f *fixture) elevated() Stage {
	return Stage{Language: "bash", Code: "cat " + f.sshKey, Elevated: true}
}

// answerer plays the human: it waits for a request file in dir, checks
// it describes the stage, and writes reply into it (appending if add).
func answerer(t *testing.T, dir, reply string, add bool) chan string {
	seen := make(chan string, 1)
	go func() {
		defer close(seen)
		for i := 0; i < 200; i++ {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					continue
				}
				p := filepath.Join(dir, e.Name())
				req, _ := os.ReadFile(p)
				seen <- string(req)
				flag := os.O_WRONLY | os.O_TRUNC
				if add {
					flag = os.O_WRONLY | os.O_APPEND
				}
				fh, err := os.OpenFile(p, flag, 0)
				if err != nil {
					t.Error(err)
					return
				}
				fh.WriteString(reply + "\n")
				fh.Close()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Error("no request appeared")
	}()
	return seen
}

func TestElevatedWithoutConsentIsDenied(t *testing.T) {
	f := newFixture(t)
	res := f.run(steps(f.elevated()))
	f.noSecret(res)
	if !res.Failed || !strings.Contains(res.Reason, "elevation denied") {
		t.Fatalf("got %s", res)
	}
}

func TestDirConsentAllow(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	f.consent = &DirConsent{Dir: dir, Timeout: time.Minute, Poll: 10 * time.Millisecond}
	seen := answerer(t, dir, "allow", false)
	res := f.run(steps(bash("echo in"), f.elevated()))
	req := <-seen
	if !strings.Contains(req, "stage: 2") || !strings.Contains(req, "cat "+f.sshKey) ||
		!strings.HasSuffix(req, "write allow or deny into this file\n") {
		t.Errorf("request file:\n%s", req)
	}
	f.wantOK(res, fakeKey) // outside the sandbox, the key is readable
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("request file left behind: %v", ents)
	}
}

func TestDirConsentDeny(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	f.consent = &DirConsent{Dir: dir, Timeout: time.Minute, Poll: 10 * time.Millisecond}
	answerer(t, dir, "deny", true)
	res := f.run(steps(f.elevated()))
	f.noSecret(res)
	if !res.Failed || res.Reason != "elevation denied" {
		t.Fatalf("got %s", res)
	}
}

func TestDirConsentTimeoutDenies(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	f.consent = &DirConsent{Dir: dir, Timeout: 100 * time.Millisecond, Poll: 10 * time.Millisecond}
	res := f.run(steps(f.elevated()))
	f.noSecret(res)
	if !res.Failed || res.Reason != "elevation denied" {
		t.Fatalf("got %s", res)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("request file left behind: %v", ents)
	}
}

func TestDirConsentCancel(t *testing.T) {
	d := &DirConsent{Dir: t.TempDir(), Timeout: time.Hour, Poll: 10 * time.Millisecond}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if dec, err := d.Ask(ctx, Request{Stage: "1", Language: "sh", Code: "true"}); dec != Deny || err == nil {
		t.Fatalf("got %v, %v", dec, err)
	}
}

func TestPreapproved(t *testing.T) {
	f := newFixture(t)
	st := f.elevated()
	raw, _ := json.Marshal(Stage{Language: st.Language, Code: "  " + st.Code + "\n"})
	f.sb.Preapproved = []json.RawMessage{raw}
	res := f.run(steps(st))
	f.wantOK(res, fakeKey)
	// Anything else still needs consent.
	st.Code += " /dev/null"
	res = f.run(steps(st))
	if !res.Failed || !strings.Contains(res.Reason, "elevation denied") {
		t.Fatalf("not preapproved, yet: %s", res)
	}
}

func TestAnswerParsing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "req")
	for _, tc := range []struct {
		text string
		dec  Decision
		ok   bool
	}{
		{Request{Code: "echo allow\nallow"}.String(), Deny, false},
		{"allow\n", Allow, true},
		{" Deny \n\n", Deny, true},
		{Request{}.String() + "allow\n", Allow, true},
		{"maybe", Deny, false},
	} {
		os.WriteFile(p, []byte(tc.text), 0o600)
		if dec, ok := answer(p); dec != tc.dec || ok != tc.ok {
			t.Errorf("%q: got %v %v", tc.text, dec, ok)
		}
	}
}
