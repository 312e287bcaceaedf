package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/testutil"
)

// A step is one command of the tutorial and the output it shows.
type step struct {
	cmd  string
	want []string
}

// tutorialSteps returns the commands of the ```sh blocks of a markdown
// page: lines "$ command", each followed by its expected output.
func tutorialSteps(doc string) []step {
	var steps []step
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case line == "```sh":
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case !in:
		case strings.HasPrefix(line, "$ "):
			steps = append(steps, step{cmd: line[2:]})
		case len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	return steps
}

// matchLines matches output lines against expected ones, where a line
// "..." stands for any lines and "..." in a line for any text.
func matchLines(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matchLines(got[i:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && matchLine(got[0], want[0]) && matchLines(got[1:], want[1:])
}

func matchLine(got, want string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return got == want
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	got = got[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(got, p)
		if i < 0 {
			return false
		}
		got = got[i+len(p):]
	}
	return strings.HasSuffix(got, parts[len(parts)-1])
}

func TestMatchLines(t *testing.T) {
	for _, c := range []struct {
		got, want string
		ok        bool
	}{
		{"a\nb", "a\nb", true},
		{"a\nb", "a\nc", false},
		{"ollie running (pid 42)", "ollie running (pid ...)", true},
		{"x\ny\nz", "x\n...", true},
		{"x\ny\nz", "...\nz", true},
		{"x", "x\n...", true},
		{"x\ny", "...\nq", false},
		{"s/1-2\ttr/3", "s/...\ttr/...", true},
	} {
		if got := matchLines(strings.Split(c.got, "\n"), strings.Split(c.want, "\n")); got != c.ok {
			t.Errorf("matchLines(%q, %q) = %v", c.got, c.want, got)
		}
	}
}

// TestTutorial runs docs/tutorial.md as a newcomer would, in one bash,
// with the dry-run setup it describes: every command of its ```sh
// blocks, checking what each prints. The scripted server's port is a
// free one instead of 8088, and the home directory is shown as /home/you.
func TestTutorial(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	testutil.RequireFUSE(t)
	b, err := os.ReadFile("../../docs/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	// The tutorial's bash starts the scripted server on an address the
	// text names; it cannot be handed a listener.
	addr := "127.0.0.1:" + strconv.Itoa(fixedPort(t))
	steps := tutorialSteps(strings.ReplaceAll(string(b), "127.0.0.1:8088", addr))
	if len(steps) < 20 {
		t.Fatalf("found %d commands in the tutorial", len(steps))
	}

	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, bin := filepath.Join(root, "home"), filepath.Join(root, "bin")
	os.MkdirAll(home, 0755)
	rt, err := os.MkdirTemp("", "olt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	exe, _ := os.Executable()
	testutil.WriteFile(t, bin, "ollie", "#!/bin/sh\nOLLIE_TEST_MAIN=1 exec '"+exe+"' \"$@\"\n", 0755)
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + rt, "PATH=" + bin + ":/usr/bin:/bin", "LANG=C.UTF-8"}
	t.Cleanup(func() { // whatever happened, no daemon stays behind
		stop := exec.Command(filepath.Join(bin, "ollie"), "stop")
		stop.Env = env
		stop.Run()
	})

	var script strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&script, "%s\nprintf '\\n@@END %%d\\n' $?\n", s.cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir, cmd.Env = "../..", env // the tutorial starts in the checkout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second // the server started with & holds stderr
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	chunks := strings.Split(strings.ReplaceAll(out.String(), home, "/home/you"), "@@END ")
	for i, s := range steps {
		if i+1 >= len(chunks) {
			t.Fatalf("the tutorial stopped before %q (%v)\nstderr:\n%s", s.cmd, runErr, errb.String())
		}
		text := chunks[i]
		if i > 0 {
			_, text, _ = strings.Cut(text, "\n") // after the status of the step before
		}
		text = strings.TrimSuffix(text, "\n") // the one printf wrote before @@END
		status, _, _ := strings.Cut(chunks[i+1], "\n")
		var gotLines []string
		if text != "" {
			gotLines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		}
		got := strings.Join(gotLines, "\n")
		if status != "0" {
			t.Errorf("$ %s\nexit status %s\n%s", s.cmd, status, got)
		} else if !matchLines(gotLines, s.want) {
			t.Errorf("$ %s\ngot:\n%s\nwant:\n%s", s.cmd, got, strings.Join(s.want, "\n"))
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", errb.String())
	}
}
