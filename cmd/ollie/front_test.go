package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// frontEnv is a user's machine for the front-ends: `ollie` on PATH (this
// test binary), a daemon serving and mounting the tree as `ollie serve
// -mount` does, a scripted model, and a project directory in which s/,
// b/ and u/ are links to the tree's, so the documented pipelines run
// verbatim there.
type frontEnv struct {
	t    *testing.T
	llm  *llmtest.Server
	root string // everything lives under it
	home string
	cwd  string // the project directory
	mnt  string // the mounted tree ($OLLIE)
	bin  string // holds the ollie command
	rt   string // XDG_RUNTIME_DIR, short for the socket's sake
	env  []string
}

func newFrontEnv(t *testing.T, sc *llmtest.Script) *frontEnv {
	t.Helper()
	testutil.RequireFUSE(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt, err := os.MkdirTemp("", "olf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	e := &frontEnv{t: t, llm: llmtest.NewTest(t, sc), root: root, home: filepath.Join(root, "home"),
		cwd: filepath.Join(root, "proj"), bin: filepath.Join(root, "bin"), rt: rt}
	e.mnt = filepath.Join(e.home, "mnt", "ollie")
	for _, d := range []string{e.home, e.cwd, e.bin} {
		if err := os.MkdirAll(d, 0755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, e.bin, "ollie", "#!/bin/sh\nOLLIE_TEST_MAIN=1 exec '"+exe+"' \"$@\"\n", 0755)
	e.env = []string{"HOME=" + e.home, "XDG_RUNTIME_DIR=" + rt, "PATH=" + e.bin + ":/usr/local/bin:/usr/bin:/bin",
		"OLLAMA_HOST=" + e.llm.URL, "OLLIE=" + e.mnt, "LANG=C.UTF-8", "TMPDIR=" + root}
	e.startDaemon()
	for _, d := range []string{"s", "b", "u"} {
		if err := os.Symlink(filepath.Join(e.mnt, d), filepath.Join(e.cwd, d)); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// startDaemon runs `ollie serve -mount` until the test ends and waits for
// the tree to be there.
func (e *frontEnv) startDaemon() {
	t := e.t
	cmd := exec.Command(filepath.Join(e.bin, "ollie"), "serve", "-mount", e.mnt)
	cmd.Env = e.env
	logPath := filepath.Join(e.root, "daemon.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) // unmounts on the way out
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			exec.Command("umount", "-l", e.mnt).Run()
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(e.mnt, "s", "new")); err == nil {
			return
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the daemon exited:\n%s", b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the tree did not appear at %s:\n%s", e.mnt, b)
		}
	}
}

// run runs a command line with shell (sh is dash, as scripts see it; bash
// is what a user types into) in the project directory.
func (e *frontEnv) run(shell, line, stdin string) (stdout, stderr string, code int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-c", line)
	cmd.Dir, cmd.Env = e.cwd, e.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		e.t.Fatalf("%s -c %q did not finish:\nstdout: %s\nstderr: %s", shell, line, out.String(), errb.String())
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		e.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// ok runs a line that must succeed and returns its standard output.
func (e *frontEnv) ok(shell, line string) string {
	e.t.Helper()
	out, errs, code := e.run(shell, line, "")
	if code != 0 {
		e.t.Fatalf("%s -c %q: exit %d\nstdout: %s\nstderr: %s", shell, line, code, out, errs)
	}
	return out
}

// read reads a file of the tree.
func (e *frontEnv) read(p string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.mnt, p))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// sessions returns the ids in s/idx.
func (e *frontEnv) sessions() []string {
	e.t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(e.read("s/idx")), "\n") {
		if id, _, ok := strings.Cut(line, "\t"); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// userTexts returns the last user message of every chat request the
// model got, with the model it was sent to.
func (e *frontEnv) userTexts() (texts, models []string) {
	for _, r := range e.llm.Requests() {
		if len(r.Messages) == 0 {
			continue
		}
		m := r.Messages[len(r.Messages)-1]
		texts, models = append(texts, m.Text), append(models, r.Model)
	}
	return texts, models
}
