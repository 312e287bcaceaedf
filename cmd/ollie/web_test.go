package main

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/testutil"
)

// TestWebVerb runs `ollie web` as a user does: its first line is the URL
// with a fresh token on loopback, a request without the token gets 401,
// and it ends when the daemon does.
func TestWebVerb(t *testing.T) {
	cfg := testutil.Home(t, nil)
	d, err := daemon.Start(cfg, daemon.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	urls := map[string]bool{}
	for range 2 {
		cmd, u, _ := webProcess(t, cfg.Socket)
		if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/?token=") || urls[u] {
			t.Errorf("first line %q: want a fresh http://127.0.0.1:PORT/?token=… URL", u)
		}
		urls[u] = true
		base, _, _ := strings.Cut(u, "/?")
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / without the token: %s", resp.Status)
		}
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(testutil.HangTimeout):
			cmd.Process.Kill()
			t.Fatal("ollie web did not end on SIGINT")
		}
	}
	// It ends by itself when the daemon goes away.
	cmd, _, _ := webProcess(t, cfg.Socket)
	d.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(testutil.HangTimeout):
		cmd.Process.Kill()
		t.Fatal("ollie web outlived the daemon")
	}
}

// webProcess starts `ollie web` against the daemon at socket, as a user
// does (the real ollie, which becomes ollie-web), and returns it with the
// URL of its first line and its stderr.
// The caller ends it.
func webProcess(t testing.TB, socket string) (*exec.Cmd, string, *testutil.LogBuf) {
	t.Helper()
	cmd := exec.Command(filepath.Join(builtBinaries(t), "ollie"), "web", "-daemon", socket)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &testutil.LogBuf{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no URL: %v; stderr: %s", err, errb.String())
	}
	return cmd, strings.TrimSpace(line), errb
}

func TestWebLoopbackOnly(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"web", "-addr", "0.0.0.0:0"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "only loopback") {
		t.Errorf("web -addr 0.0.0.0:0: exit %d, %s", code, errb.String())
	}
	f := filepath.Join(t.TempDir(), "ollie.json")
	os.WriteFile(f, []byte(`{"web": "192.0.2.1:8080"}`), 0600)
	errb.Reset()
	if code := Main([]string{"-config", f, "status"}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "web: refusing") {
		t.Errorf("ollie.json with web on a public address: exit %d, %s", code, errb.String())
	}
}

// TestStartStartsWeb: with "web" in ollie.json, ollie start starts
// ollie web too and prints its URL, and ollie stop ends both.
func TestStartStartsWeb(t *testing.T) {
	home := t.TempDir()
	rt, err := os.MkdirTemp("", "olw")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	os.MkdirAll(filepath.Join(home, ".config/ollie"), 0700)
	os.WriteFile(filepath.Join(home, ".config/ollie/ollie.json"), []byte(`{"web": "127.0.0.1:0"}`), 0600)
	exe := filepath.Join(builtBinaries(t), "ollie")
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + rt, "PATH=/usr/bin:/bin"}
	run := func(args ...string) string {
		cmd := exec.Command(exe, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ollie %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("start", "-nomount")
	t.Cleanup(func() {
		cmd := exec.Command(exe, "stop")
		cmd.Env = env
		cmd.Run()
	})
	_, u, ok := strings.Cut(out, "web    ")
	u, _, _ = strings.Cut(u, "\n")
	if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/?token=") {
		t.Fatalf("ollie start printed no URL:\n%s", out)
	}
	base, _, _ := strings.Cut(u, "/?")
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET / without the token: %s", resp.Status)
	}
	run("stop")
	testutil.Until(t, "ollie web to end with the daemon", func() bool {
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
}

// TestWebNeedsItsBinary: without ollie-web beside ollie (this test
// binary has none), ollie web says how to build it.
func TestWebNeedsItsBinary(t *testing.T) {
	exe, _ := os.Executable()
	if _, err := os.Stat(filepath.Join(filepath.Dir(exe), webName)); err == nil {
		t.Skip("an ollie-web beside the test binary: ollie web would become it")
	}
	testutil.Home(t, nil)
	var out, errb bytes.Buffer
	if code := Main([]string{"web"}, nil, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "ollie-web is not installed beside") || !strings.Contains(errb.String(), "go build -o") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
