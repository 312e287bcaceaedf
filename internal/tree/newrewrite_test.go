package tree

import (
	"context"
	"errors"
	"testing"

	"ollie.dev/ollie/internal/errs"
)

// A Rewrite over a store of its caller's (as a session's plan is): saved
// whole at the commit only, never cut, voided and reloaded after a write
// over the limit, and emptied by an O_TRUNC open with nothing written.
func TestNewRewrite(t *testing.T) {
	ctx := context.Background()
	stored := []byte("old plan")
	saves := 0
	ops := RewriteOps{
		Save:   func(b []byte, _ int64) error { saves++; stored = append([]byte(nil), b...); return nil },
		Reload: func() []byte { return append([]byte(nil), stored...) },
	}
	r := NewRewrite("plan", 16, append([]byte(nil), stored...), false, ops)
	if _, err := r.WriteAt(ctx, []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if string(stored) != "old plan" {
		t.Fatalf("a write reached the store: %q", stored)
	}
	if err := r.Sync(); err != nil || string(stored) != "new plan" || saves != 1 {
		t.Fatalf("commit: %v %q (%d saves)", err, stored, saves)
	}
	if err := r.Sync(); err != nil || saves != 1 {
		t.Fatalf("a commit with no change saved: %v (%d saves)", err, saves)
	}
	// Over the limit: this write and the ones before it since the commit
	// are void; the commit says so and saves nothing.
	r.WriteAt(ctx, []byte("xx"), 0)
	if _, err := r.WriteAt(ctx, make([]byte, 10), 10); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("write past 16 bytes: %v", err)
	}
	if _, err := r.WriteAt(ctx, []byte("y"), 0); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("a write after the failed one: %v", err)
	}
	if err := r.Close(); !errs.Is(err, errs.TooLarge) || string(stored) != "new plan" || saves != 1 {
		t.Fatalf("close after a failed write: %v %q", err, stored)
	}
	p := make([]byte, 32)
	if n, _ := r.ReadAt(ctx, p, 0); string(p[:n]) != "new plan" {
		t.Errorf("after the void, the open reads %q", p[:n])
	}
	// O_TRUNC: empty at the commit, even with nothing written.
	tr := NewRewrite("plan", 16, nil, true, ops)
	if err := tr.Close(); err != nil || len(stored) != 0 || saves != 2 {
		t.Fatalf("O_TRUNC close: %v %q", err, stored)
	}
	// A failing store keeps the change for the next commit.
	fail := errors.New("disk full")
	ops.Save = func(b []byte, _ int64) error { return fail }
	fr := NewRewrite("plan", 16, nil, false, ops)
	fr.WriteAt(ctx, []byte("z"), 0)
	if err := fr.Sync(); err != fail {
		t.Fatalf("sync: %v", err)
	}
	ops.Save = func(b []byte, _ int64) error { stored = b; return nil }
	fr.ops = ops
	if err := fr.Close(); err != nil || string(stored) != "z" {
		t.Fatalf("the retried commit: %v %q", err, stored)
	}
}

// With a Check, an invalid write changes nothing and is reported to
// Invalid; unfinished content waits, and fails the commit if it stays so.
func TestNewRewriteCheck(t *testing.T) {
	ctx := context.Background()
	var stored []byte
	invalid := 0
	r := NewRewrite("doc", 64, nil, false, RewriteOps{
		Save: func(b []byte, _ int64) error { stored = b; return nil },
		Check: func(b []byte) error {
			switch {
			case len(b) > 0 && b[0] == '!':
				return errs.E(errs.Invalid, "bang")
			case len(b) > 0 && b[len(b)-1] != '.':
				return ErrIncomplete
			}
			return nil
		},
		Invalid: func() { invalid++ },
	})
	if _, err := r.WriteAt(ctx, []byte("!no"), 0); !errs.Is(err, errs.Invalid) || invalid != 1 {
		t.Fatalf("an invalid write: %v (%d)", err, invalid)
	}
	if _, err := r.WriteAt(ctx, []byte("half"), 0); err != nil {
		t.Fatalf("unfinished content: %v", err)
	}
	if err := r.Sync(); err == nil || stored != nil || invalid != 2 {
		t.Fatalf("commit of unfinished content: %v %q", err, stored)
	}
	r.WriteAt(ctx, []byte("."), 4)
	if err := r.Close(); err != nil || string(stored) != "half." {
		t.Fatalf("commit: %v %q", err, stored)
	}
}
