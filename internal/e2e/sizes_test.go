package e2e_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/testutil"
)

// sizedFiles are files of a fresh tree and of a session after a turn whose
// stat must give the length a read returns (NAMESPACE rule 9).
var sizedFiles = []string{
	"help", "backends", "errors", "s/new", "t/idx", "sk/idx", "s/idx", "stats/uptime", "stats/sessions",
	"s/x/state", "s/x/cfg", "s/x/usage", "s/x/cost", "s/x/ctxsz", "s/x/env",
	"s/x/offset", "s/x/prompt.prev", "s/x/reply", "s/x/context", "s/x/chat",
	"s/x/tail", "s/x/plan",
}

// TestTrueSizes checks, through the mount, what a user's tools trust: the
// size stat reports is what cat reads ([ -s ], wc -c, which takes st_size
// when it is not a multiple of the page size, and Python's getsize).
func TestTrueSizes(t *testing.T) {
	testutil.Require(t, "python3")
	e := start(t)
	e.newSession()
	e.sh(`echo 'plan: a b c' > $M/s/x/plan; echo 'TOKEN=abc' > $M/s/x/env; echo hello > $M/s/x/prompt; cat $M/s/x/wait >/dev/null`)
	e.fails(`echo bogus > $M/s/x/ctl`, "Invalid argument") // a line in errors
	for _, f := range sizedFiles {
		script := `f=$M/` + f + `
			[ -s "$f" ] || { echo "[ -s $f ] is false"; exit 1; }
			st=$(stat -c %s "$f"); rd=$(cat "$f" | wc -c); wc=$(wc -c < "$f")
			[ "$st" = "$rd" ] || { echo "stat says $st, cat reads $rd"; exit 1; }
			[ "$wc" = "$rd" ] || { echo "wc -c says $wc, cat reads $rd"; exit 1; }
			python3 -c 'import os, sys; p = sys.argv[1]; n = os.path.getsize(p); d = open(p, "rb").read()
if n != len(d): sys.exit("getsize %d, read %d" % (n, len(d)))' "$f"`
		if out, err := e.try(script); err != nil {
			t.Errorf("%s: %v: %s", f, err, out)
		}
	}
	// An empty queue is empty in stat too.
	e.sh(`[ "$(stat -c %s $M/s/x/queue)" = 0 ]; [ -z "$(cat $M/s/x/queue)" ]`)
	// events blocks at its end, so only the bytes it has are read.
	e.sh(`n=$(stat -c %s $M/s/x/events); [ "$n" -gt 0 ]; [ "$(head -c "$n" $M/s/x/events | wc -c)" = "$n" ]; [ "$(head -c "$n" $M/s/x/events | tail -c 1 | od -An -c | tr -d ' ')" = '\n' ]`)
	// Files that block or ask a backend report 0, and still read whole.
	for _, f := range []string{"s/x/wait", "s/x/models"} {
		if got := e.sh(`stat -c %s $M/` + f); got != "0\n" {
			t.Errorf("stat %s = %q, want 0", f, got)
		}
	}
	if got := e.sh(`cat $M/s/x/wait`); got != "idle\n" {
		t.Errorf("cat wait = %q", got)
	}
}

// TestSizeChangesBetweenOpens reads a synthesized file whose content grows
// right after a stat: the read is not cut at the size the kernel was told
// (direct I/O), and the next stat is true again.
func TestSizeChangesBetweenOpens(t *testing.T) {
	e := start(t)
	e.newSession()
	before := e.sh(`stat -c %s $M/s/x/cfg`)
	e.sh(`echo 'max_steps=1234 temperature=0.5' > $M/s/x/cfg`)
	got := e.sh(`cat $M/s/x/cfg`)
	if !strings.Contains(got, "max_steps=1234\n") || !strings.HasSuffix(got, "\n") || !strings.Contains(got, "sandbox=") {
		t.Fatalf("cfg read after a change of its size (was %s) = %q", strings.TrimSpace(before), got)
	}
	e.sh(`[ "$(stat -c %s $M/s/x/cfg)" = "$(cat $M/s/x/cfg | wc -c)" ]`)
	// A file the daemon appends to behind the mount's back (context) is
	// read whole right after it grew, though its last size was just seen.
	sess, ok := e.daemon().Sessions.Get("x")
	if !ok {
		t.Fatal("no session x")
	}
	e.sh(`cat $M/s/x/context >/dev/null; stat $M/s/x/context >/dev/null; echo grow > $M/s/x/prompt; cat $M/s/x/wait >/dev/null
		[ "$(cat $M/s/x/context | wc -c)" = "$(wc -c < ` + sess.ContextPath() + `)" ]`)
	// Several reads of one open see the snapshot of that open, whatever
	// changes meanwhile.
	e.sh(`exec 3< $M/s/x/usage; head -c 3 <&3 >/dev/null; echo hi > $M/s/x/prompt; cat $M/s/x/wait >/dev/null; cat <&3 >/dev/null; exec 3<&-`)
}

// TestTailEvents follows events the way a user does: tail -f prints each
// event as it is appended, the tail of what was there at the start first.
func TestTailEvents(t *testing.T) {
	e := start(t)
	e.newSession()
	e.sh(`echo first > $M/s/x/prompt; cat $M/s/x/wait >/dev/null`)
	lines := e.follow(filepath.Join(e.mnt, "s", "x", "events"))
	seen := func(what string, want ...string) {
		t.Helper()
		deadline := time.After(hangTimeout)
		for {
			select {
			case l := <-lines:
				ok := true
				for _, w := range want {
					ok = ok && strings.Contains(l, w)
				}
				if ok {
					return
				}
			case <-deadline:
				t.Fatalf("tail -f events printed no line with %q (%s)", want, what)
			}
		}
	}
	seen("the last event before tail started", `"state":"idle"`)
	e.sh(`echo 'block me' > $M/s/x/prompt`)
	seen("the new turn", `"state":"running"`)
	e.runner.Release()
	seen("its end", `"state":"idle"`)
	// And the chat's script tail follows too.
	chat := e.follow(filepath.Join(e.mnt, "s", "x", "chat"))
	e.sh(`echo again > $M/s/x/prompt; cat $M/s/x/wait >/dev/null`)
	if got := waitFor(t, chat, "tail -f chat"); got == "" {
		t.Fatal("tail -f chat printed an empty line")
	}
}
