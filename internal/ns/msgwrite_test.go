package ns

import (
	"context"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// collect is a message file whose commits are recorded.
func collect(spec *msgSpec) (*msgHandle, *[]string) {
	var got []string
	return newMsg(spec, func(m string) error { got = append(got, m); return nil }), &got
}

func TestMessageIsOneOpen(t *testing.T) {
	ctx := context.Background()
	h, got := collect(promptMsg)
	for _, p := range []string{"line one\n", "line two\n", "no newline"} {
		if _, err := h.WriteAt(ctx, []byte(p), 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(*got) != 0 {
		t.Fatalf("committed before the close: %q", *got)
	}
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil { // nothing since the commit: nothing sent
		t.Fatal(err)
	}
	if strings.Join(*got, "|") != "line one\nline two\nno newline" {
		t.Errorf("commits %q", *got)
	}
}

func TestMessageErrorsOnTheWrite(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		what   string
		pieces []string
		kind   errs.Kind
	}{
		{"too large", []string{strings.Repeat("a", 3<<20), strings.Repeat("a", 2<<20)}, errs.TooLarge},
		{"not UTF-8", []string{"ok ", "\xff"}, errs.Invalid},
		{"bad second byte", []string{"ok \xc3", "("}, errs.Invalid},
	} {
		h, got := collect(promptMsg)
		var err error
		for _, p := range c.pieces {
			if _, err = h.WriteAt(ctx, []byte(p), 0); err != nil {
				break
			}
		}
		if !errs.Is(err, c.kind) {
			t.Errorf("%s: last write %v, want %v", c.what, err, c.kind)
		}
		if cerr := h.Close(); !errs.Is(cerr, c.kind) || len(*got) != 0 {
			t.Errorf("%s: close %v, commits %q; want the error again and nothing sent", c.what, cerr, *got)
		}
	}
	// A character cut between writes is whole once the next one comes,
	// and wrong if the message ends there.
	h, got := collect(promptMsg)
	h.WriteAt(ctx, []byte("caf\xc3"), 0)
	if _, err := h.WriteAt(ctx, []byte("\xa9"), 0); err != nil {
		t.Fatal(err)
	}
	h.Sync()
	h.WriteAt(ctx, []byte("cut \xe2\x82"), 0)
	if err := h.Close(); !errs.Is(err, errs.Invalid) || strings.Join(*got, "|") != "café" {
		t.Errorf("close %v, commits %q", err, *got)
	}
	// Complete lines are checked as they arrive.
	s, _ := collect(newSessionMsg)
	if _, err := s.WriteAt(ctx, []byte("cwd=/\ncolour="), 0); err != nil {
		t.Fatalf("an unfinished line failed: %v", err)
	}
	if _, err := s.WriteAt(ctx, []byte("red\n"), 0); !errs.Is(err, errs.Invalid) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestCtlPerWrite(t *testing.T) {
	var ran []string
	h := &ctlHandle{run: func(c string) error {
		if c == "bogus" {
			return errs.E(errs.Invalid, "unknown control message")
		}
		ran = append(ran, c)
		return nil
	}}
	ctx := context.Background()
	if _, err := h.WriteAt(ctx, []byte("save\nclear"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(ctx, []byte("stop\nbogus\nkill\n"), 0); err == nil {
		t.Error("a bad second command did not fail the write")
	}
	if _, err := h.WriteAt(ctx, []byte("\n"), 0); err == nil {
		t.Error("an empty write did not fail")
	}
	if strings.Join(ran, " ") != "save clear stop" {
		t.Errorf("ran %q", ran)
	}
}

// Concurrent reads, writes and commits of one open of plan (go test -race).
func TestPlanConcurrent(t *testing.T) {
	h := tree.NewRewrite("plan", maxPlan, nil, false, tree.RewriteOps{Save: func([]byte, int64) error { return nil }})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 200 {
				h.WriteAt(ctx, []byte("step\n"), int64((i*200+j)*5))
			}
		}()
		go func() {
			defer wg.Done()
			p := make([]byte, 64)
			for range 200 {
				h.ReadAt(ctx, p, 0)
			}
		}()
	}
	wg.Wait()
	if n, _ := h.ReadAt(ctx, make([]byte, 8000), 0); n != 4000 {
		t.Errorf("plan is %d bytes, want 4000", n)
	}
	if _, err := h.WriteAt(ctx, make([]byte, 1000), maxPlan-10); !errs.Is(err, errs.TooLarge) {
		t.Errorf("write past the limit: %v", err)
	}
}

// Any bytes, split anywhere, get the verdict of utf8.Valid on the whole.
func FuzzMessageUTF8(f *testing.F) {
	f.Add([]byte("caf\xc3\xa9 ok"), uint8(4))
	f.Add([]byte("\xe2\x82"), uint8(1))
	f.Add([]byte("\xff"), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		h, got := collect(promptMsg)
		i := min(int(cut), len(b))
		_, err1 := h.WriteAt(context.Background(), b[:i], 0)
		var err2 error
		if err1 == nil {
			_, err2 = h.WriteAt(context.Background(), b[i:], 0)
		}
		err := h.Close()
		valid := utf8.Valid(b)
		switch {
		case valid && (err1 != nil || err2 != nil || err != nil) && len(b) > 0:
			t.Fatalf("%q cut at %d: %v %v %v, want it taken", b, i, err1, err2, err)
		case !valid && err == nil:
			t.Fatalf("%q cut at %d: committed %q", b, i, *got)
		case valid && len(b) > 0 && (len(*got) != 1 || (*got)[0] != string(b)):
			t.Fatalf("%q: committed %q", b, *got)
		}
	})
}
