package trim

import (
	"context"
	"time"
)

// IdleEvery is how often a process looks whether it went quiet: a look
// with no request since the last one, which saw some, gives back what
// those requests brought in (Executable: pages of the executable, the
// heap's garbage). After 240 turns a daemon held some 27 MB of its
// executable resident; trimmed, 4.
const IdleEvery = 10 * time.Second

// WhenIdle calls Executable once ops, the count of requests served,
// stops moving after it moved: at most one look after the process went
// quiet, and never again until it is busy once more. It returns when ctx
// ends.
func WhenIdle(ctx context.Context, ops func() uint64) {
	(&idleTrimmer{ops: ops, trim: Executable}).run(ctx)
}

type idleTrimmer struct {
	ops  func() uint64
	trim func()
	last uint64
	busy bool
}

// look is one look at ops.
func (t *idleTrimmer) look() {
	n := t.ops()
	switch {
	case n != t.last:
		t.last, t.busy = n, true
	case t.busy:
		t.trim()
		t.busy = false
	}
}

// run looks every IdleEvery until ctx ends.
func (t *idleTrimmer) run(ctx context.Context) {
	t.last = t.ops()
	tk := time.NewTicker(IdleEvery)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			t.look()
		}
	}
}
