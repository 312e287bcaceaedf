package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ollie.dev/ollie/internal/testutil"
)

// newSession makes a session named x the way a user does, and returns the
// path of its directory in the mount.
func (e *env) newSession() string {
	e.t.Helper()
	e.sh(`echo "cwd=$W name=x" > $M/s/new; test -d $M/s/x`)
	return filepath.Join(e.mnt, "s", "x")
}

// follow runs tail -f on path and returns its lines.
func (e *env) follow(path string) <-chan string {
	cmd := exec.Command("tail", "-s", "0.1", "-f", path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// expect reads lines until want, failing if another comes first.
func expect(t *testing.T, lines <-chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		if got := waitFor(t, lines, "tail -f: "+w); got != w {
			t.Fatalf("tail -f printed %q, want %q", got, w)
		}
	}
}

func TestTailFollows(t *testing.T) {
	e := start(t)
	e.sh(`echo first > $M/m/log`)
	lines := e.follow(filepath.Join(e.mnt, "m", "log"))
	expect(t, lines, "first")
	e.sh(`echo second >> $M/m/log`)
	expect(t, lines, "second")
	e.sh(`echo third >> $DATA/m/log`) // another writer, on disk
	expect(t, lines, "third")

	e.newSession()
	chat := e.follow(filepath.Join(e.mnt, "s", "x", "chat"))
	for _, q := range []string{"hello", "again"} {
		e.sh(`echo ` + q + ` > $M/s/x/prompt; cat $M/s/x/wait >/dev/null`)
		expect(t, chat, "user: "+q, "assistant: echo: "+q)
	}
	e.sh(`echo 'block me' > $M/s/x/prompt`)
	expect(t, chat, "user: block me")
	e.runner.Release()
	expect(t, chat, "assistant: echo: block me")
}

func TestCtlError(t *testing.T) {
	e := start(t)
	e.newSession()
	e.fails(`echo bogus > $M/s/x/ctl`, "Invalid argument")
	if !strings.Contains(e.log.String(), `write /s/x/ctl: bad request: unknown control message "bogus"`) {
		t.Errorf("the mount log lacks the daemon's message:\n%s", e.log)
	}
	e.fails(`echo 'model' > $M/s/x/ctl`, "Invalid argument")
	e.fails(`echo 'nokey=1' >> $M/s/x/cfg`, "Invalid argument")
	e.sh(`echo save > $M/s/x/ctl; echo hi > $M/s/x/prompt; test "$(cat $M/s/x/wait)" = idle`)
}

// TestCtrlCEndsWait interrupts cat of a blocking file while a turn runs:
// the read must end at once and the mount keep working.
func TestCtrlCEndsWait(t *testing.T) {
	e := start(t)
	e.newSession()
	e.sh(`echo 'block forever' > $M/s/x/prompt`)
	waitFor(t, e.runner.Started, "the turn to start")
	st := &e.daemon().Server.Stats
	for range 3 {
		// cat's is the only read; the kernel's release of the last
		// cat's file may still be running, so Pending alone cannot tell.
		reads := e.ops("read")
		cmd := exec.Command("cat", filepath.Join(e.mnt, "s", "x", "wait"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// cat is blocked once its read is being served at the daemon:
		// a read of wait returns only when the turn ends.
		testutil.Until(t, "cat's read of wait reaching the daemon", func() bool {
			select {
			case err := <-done:
				t.Fatalf("cat wait returned while the turn runs: %v", err)
			default:
			}
			return e.ops("read") > reads
		})
		flushed := st.Flushed.Load()
		cmd.Process.Signal(syscall.SIGINT)
		err := waitFor(t, done, "cat wait after SIGINT")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Fatalf("cat ended with %v, want killed by SIGINT", err)
		}
		// The interrupt reached the daemon as a Tflush of that read.
		testutil.Until(t, "the Tflush of cat's read", func() bool { return st.Flushed.Load() == flushed+1 })
	}
	if got := e.sh(`cat $M/s/x/state`); got != "running\n" {
		t.Errorf("state after interrupted waits = %q", got)
	}
	e.sh(`echo stop > $M/s/x/ctl; cat $M/s/x/wait >/dev/null; echo hi > $M/s/x/prompt; cat $M/s/x/wait >/dev/null; grep -q 'echo: hi' $M/s/x/reply`)
}

// TestDaemonRestart stops the daemon under a live mount and starts a new
// one on the same socket: open files, tail -f and new commands carry on,
// and nothing hangs while the daemon is away.
func TestDaemonRestart(t *testing.T) {
	e := start(t)
	e.newSession()
	e.sh(`echo before > $M/m/note; echo q1 > $M/s/x/prompt; cat $M/s/x/wait >/dev/null`)
	chat := e.follow(filepath.Join(e.mnt, "s", "x", "chat"))
	expect(t, chat, "user: q1", "assistant: echo: q1")

	e.daemon().Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangTimeout)
	defer cancel()
	out, err := e.command(ctx, `cat $M/m/note`).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not connected") {
		t.Errorf("cat with the daemon down: %v %q; want ENOTCONN", err, out)
	}
	e.startDaemon()

	if got := e.sh(`cat $M/m/note`); got != "before\n" {
		t.Errorf("cat after restart = %q", got)
	}
	e.sh(`echo after >> $M/m/note; test "$(cat $M/m/note)" = "before
after"; ls -l $M/s/x >/dev/null`)
	e.sh(`echo q2 > $M/s/x/prompt; cat $M/s/x/wait >/dev/null`)
	expect(t, chat, "user: q2", "assistant: echo: q2")
	if !strings.Contains(e.log.String(), "lost the 9P connection") {
		t.Errorf("the mount did not log the lost connection:\n%s", e.log)
	}
}
