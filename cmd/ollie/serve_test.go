package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/testutil"
)

// served is an `ollie serve -mount` running as a process of its own.
type served struct {
	cmd *exec.Cmd
	env []string
	mnt string
	log *testutil.LogBuf
}

// serveMount runs the ollie binary (this test binary, as TestMain makes
// it) as `ollie serve -mount DIR` in a fresh home, and waits until the
// tree is mounted.
func serveMount(t *testing.T) *served {
	t.Helper()
	testutil.RequireFUSE(t)
	home := t.TempDir()
	rt, err := os.MkdirTemp("", "ol") // short: a unix socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	s := &served{mnt: filepath.Join(t.TempDir(), "mnt"), log: &testutil.LogBuf{},
		env: []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + rt, "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}}
	s.cmd = exec.Command(os.Args[0], "serve", "-mount", s.mnt)
	s.cmd.Env = append(s.env, "OLLIE_TEST_MAIN=1")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
			syscall.Unmount(s.mnt, syscall.MNT_DETACH)
			testutil.UnmountUnder(home)
		}
		if t.Failed() {
			t.Logf("ollie serve log:\n%s", s.log)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.log.String(), "mounted on"); {
		if time.Now().After(deadline) {
			t.Fatalf("ollie serve -mount did not mount:\n%s", s.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// logShows waits, within a deadline, until the serve log has want.
func (s *served) logShows(want string) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(s.log.String(), want) {
			return true
		}
	}
	return false
}

// sh runs a bash script with $M set to the mount point.
func (s *served) sh(t *testing.T, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(s.env, "M="+s.mnt)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: hung", script)
	}
	return string(out), err
}

// TestServeMount runs the real binary's in-process mount: the files a
// shell sees, an error the daemon explains in its log, the CLI verbs
// beside the mount, and a clean unmount on SIGINT.
func TestServeMount(t *testing.T) {
	s := serveMount(t)
	out, err := s.sh(t, `ls -l $M; cat $M/help; echo note > $M/m/n; echo more >> $M/m/n; cat $M/m/n; ls $M/s`)
	if err != nil || !strings.Contains(out, "Memory notes") || !strings.Contains(out, "note\nmore\n") {
		t.Fatalf("shell through the mount: %v\n%s", err, out)
	}
	if out, err := s.sh(t, `echo garbage > $M/a/x.json`); err == nil || !strings.Contains(out, "Invalid argument") {
		t.Errorf("echo garbage > a/x.json: %v %q", err, out)
	}
	// The log is copied from the child's stderr by another goroutine: the
	// line may arrive after the shell's echo has returned.
	if !s.logShows("ollie mount: write /a/x.json: bad request") {
		t.Errorf("the serve log lacks the daemon's reason")
	}
	if out, code := ollie(t, s.env, "", "cat", "m/n"); code != 0 || out != "note\nmore\n" {
		t.Errorf("ollie cat m/n = %d %q", code, out)
	}
	// The CLI prints the daemon's reason; the shell's user finds the
	// same text in errors.
	want := `ollie write: a/y.json: bad request: y.json: sandbox: no profile "yolo" (profiles: offline, readonly, workspace)`
	if out, code := ollie(t, s.env, `{"sandbox":"yolo"}`, "write", "a/y.json"); code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("ollie write a/y.json = %d %q, want 1 %q", code, out, want)
	}
	out, code := ollie(t, s.env, "", "cat", "errors")
	if code != 0 || !strings.Contains(out, " write a/x.json: bad request: x.json: invalid character") || !strings.Contains(out, " write a/y.json: bad request") {
		t.Errorf("ollie cat errors = %d %q", code, out)
	}
	if out, err := s.sh(t, `tail -n 2 $M/errors`); err != nil || !strings.Contains(out, "a/x.json") {
		t.Errorf("tail errors through the mount: %v %q", err, out)
	}

	s.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ollie serve after SIGINT: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ollie serve did not stop on SIGINT")
	}
	if fusebridge.IsMountPoint(s.mnt) {
		t.Errorf("%s is still mounted after ollie serve stopped", s.mnt)
	}
}
