package e2e_test

import (
	"context"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
)

// TestErrnosSayWhatHappened writes bad values through the mount with a
// real shell: each fails in the shell with the errno that means it, and
// the daemon's text for it is in $M/errors, in one step.
func TestErrnosSayWhatHappened(t *testing.T) {
	e := start(t, func(e *env) {
		e.opts.Models = func(ctx context.Context, s *session.Session) ([]string, error) {
			return nil, errs.E(errs.Unavailable, "backend ollama: dial tcp 127.0.0.1:1: connect: connection refused")
		}
	})
	e.newSession()
	e.fails(`echo temperature=9 > $M/s/x/cfg`, "Invalid argument")
	e.fails(`echo max_steps=1e3 > $M/s/x/cfg`, "Invalid argument")
	// An unknown backend is a bad value in a file that exists.
	if out := e.fails(`echo backend=nosuch > $M/s/x/cfg`, "Invalid argument"); strings.Contains(out, "No such file") {
		t.Errorf("unknown backend: %q", out)
	}
	// A backend that cannot be reached is an i/o error, not a dead mount.
	if out := e.fails(`cat $M/s/x/models`, "Input/output error"); strings.Contains(out, "not connected") {
		t.Errorf("models of an unreachable backend: %q", out)
	}
	e.fails(`printf 'A=a\0b\n' > $M/s/x/env`, "Invalid argument")
	// One write: how a spec split over several writes fails is the
	// framing's business (NAMESPACE rule 1), not this test's.
	e.fails(`printf 'cwd=%s\nparallel=2 junk\n---\nhi\n' "$W" | cat > $M/b/new`, "Invalid argument")
	e.fails(`printf -- '---\nname: y\ndescription: d\n---\n' > $M/sk/x.md`, "Invalid argument")

	// Other writers see the same errno in their own process.
	e.sh(`python3 -c '
import errno, os, sys
fd = os.open(os.environ["M"] + "/s/x/cfg", os.O_WRONLY)
try:
    os.write(fd, b"temperature=hot\n")
    sys.exit("python3: the write succeeded")
except OSError as e:
    assert e.errno == errno.EINVAL, e
try:
    os.close(fd)  # the close commits nothing, and says why again
except OSError as e:
    assert e.errno == errno.EINVAL, e
'`)
	e.fails(`printf 'max_tokens=9x\n' | dd of=$M/s/x/cfg status=none`, "Invalid argument")

	got := e.sh(`cat $M/errors`)
	for _, want := range []string{
		"write s/x/cfg: bad request: temperature=9: want a number from 0 to 2\n",
		"write s/x/cfg: bad request: max_steps=1e3: want a whole number from 1 to 10000\n",
		`write s/x/cfg: bad request: no backend "nosuch" (configured: `,
		"open s/x/models: unavailable: backend ollama: dial tcp 127.0.0.1:1: connect: connection refused\n",
		"write s/x/env: bad request: env: A: NUL byte at offset 1: want text\n",
		"write b/new: bad request: parallel=2 junk: want a whole number from 1 to 256\n",
		`write sk/x.md: bad request: x.md: name: "y" differs from the file name`,
		"write s/x/cfg: bad request: temperature=hot: want a number from 0 to 2\n",
		"write s/x/cfg: bad request: max_tokens=9x: want a whole number from 1 to 1048576\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lacks %q:\n%s", want, got)
		}
	}
	// One line per failure; the skill's refused write also leaves its
	// close to say that nothing was saved.
	if n := strings.Count(got, "\n"); n != 10 || !strings.Contains(got, "commit sk/x.md: bad request: x.md: unfinished content, not saved") {
		t.Errorf("errors has %d lines, want 10 (one per failure):\n%s", n, got)
	}
	// tail and [ -s ] see a true size.
	e.sh(`test -s $M/errors; test "$(tail -n 1 $M/errors | grep -c 'max_tokens=9x')" = 1`)
	e.sh(`test "$(cat $M/s/x/state)" = idle`) // and the mount is alive
}
