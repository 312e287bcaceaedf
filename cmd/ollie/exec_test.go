package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ollie.dev/ollie/internal/mcpcli"
	"ollie.dev/ollie/internal/mcpconf"
)

// TestMain makes the test binary an ollie binary: OLLIE_TEST_MAIN=1 runs
// Main as a whole command, and the sandbox helper (`ollie sandbox-exec`)
// is started from the init in sandboxexec.go, exactly as in production.
func TestMain(m *testing.M) {
	// This test binary is also the MCP bridge: a link to it beside it,
	// where ollie looks for ollie-mcp, runs the bridge's Main.
	if filepath.Base(os.Args[0]) == mcpconf.Program {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := mcpcli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if os.Getenv("OLLIE_TEST_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if exe, err := os.Executable(); err == nil {
		link := filepath.Join(filepath.Dir(exe), mcpconf.Program)
		if err := os.Symlink(exe, link); err != nil && !errors.Is(err, fs.ErrExist) {
			fmt.Fprintf(os.Stderr, "cannot link %s to the test binary: %v\n", link, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// execEnv is a home with a fake key and ollie directories inside it.
func execEnv(t *testing.T) (home, cwd string) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home = filepath.Join(root, "home")
	cwd = filepath.Join(home, "proj")
	for _, d := range []string{cwd, filepath.Join(home, ".ssh"), filepath.Join(home, ".config/ollie/t")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(home, ".ssh/id_rsa"), []byte("FAKE-KEY"), 0o600)
	os.WriteFile(filepath.Join(home, ".config/ollie/t/hello"), []byte("#!/bin/sh\necho hello \"$@\"\n"), 0o755)
	return home, cwd
}

// ollie runs the test binary as ollie with args, in a process of its
// own, so the environment it starts with is exactly env.
func ollie(t *testing.T, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(env, "OLLIE_TEST_MAIN=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func TestExecCommand(t *testing.T) {
	home, cwd := execEnv(t)
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "OPENAI_API_KEY=sk-LEAKED-KEY", "LANG=C.UTF-8"}
	out, code := ollie(t, env, `{"steps":[
		{"tool":"hello","args":["world"]},
		{"language":"bash","code":"cat; env; cat /proc/$PPID/environ; cat ~/.ssh/id_rsa `+home+`/.ssh/id_rsa; true"}]}`,
		"exec", "-cwd", cwd)
	if code != 0 || !strings.HasPrefix(out, "hello world\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "sk-LEAKED-KEY") || strings.Contains(out, "FAKE-KEY") {
		t.Fatalf("secret leaked:\n%s", out)
	}
	if !strings.Contains(out, "OLLIE_SANDBOX=workspace") {
		t.Errorf("not the workspace profile:\n%s", out)
	}
}

func TestExecFailureAndPolicy(t *testing.T) {
	home, cwd := execEnv(t)
	env := []string{"HOME=" + home}
	out, code := ollie(t, env, `{"steps":[{"language":"sh","code":"echo x > f"}]}`, "exec", "-cwd", cwd, "-policy", "readonly")
	if code != 1 || !strings.Contains(out, "error: stage 1 (sh) exited with status") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, code = ollie(t, env, `{"steps":[]}`, "exec", "-cwd", cwd)
	if code != 1 || !strings.Contains(out, `ollie exec: bad request: execute_code: "steps" is missing or empty`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, code = ollie(t, env, `{"steps":[{"language":"sh","code":"true"}]}`, "exec", "-cwd", cwd, "-ask", filepath.Join(cwd, "ask"))
	if code != 2 || !strings.Contains(out, "could answer itself") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, code = ollie(t, env, `{"steps":[{"language":"sh","code":"true"}]}`, "exec", "-cwd", home)
	if code != 1 || !strings.Contains(out, "contains protected") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestExecAsk(t *testing.T) {
	home, cwd := execEnv(t)
	ask := t.TempDir()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			ents, _ := os.ReadDir(ask)
			for _, e := range ents {
				if !strings.HasPrefix(e.Name(), ".") {
					os.WriteFile(filepath.Join(ask, e.Name()), []byte("allow\n"), 0o600)
					return
				}
			}
			exec.Command("sleep", "0.02").Run()
		}
	}()
	out, code := ollie(t, []string{"HOME=" + home}, `{"steps":[{"language":"sh","code":"cat `+home+`/.ssh/id_rsa","elevated":true}]}`,
		"exec", "-cwd", cwd, "-ask", ask)
	<-done
	// Allowed, the stage runs outside the sandbox and reads the key.
	if code != 0 || out != "FAKE-KEY\n" {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
