package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// The daemon asks the default backend for its model and that model's
// context window as it starts, before any session; the first turn then
// makes its request and nothing else.
func TestDaemonAsksTheBackendAtStart(t *testing.T) {
	llm := llmtest.NewTest(t, &llmtest.Script{Models: []llmtest.Model{{ID: "base"}}, Default: &llmtest.Turn{Text: "ok"}})
	root := t.TempDir()
	cwd := filepath.Join(root, "proj")
	os.MkdirAll(cwd, 0o700)
	rt, _ := os.MkdirTemp("", "olw")
	t.Cleanup(func() { os.RemoveAll(rt) })
	env := []string{"HOME=" + filepath.Join(root, "home"), "PATH=/usr/bin:/bin", "OLLAMA_HOST=" + llm.URL}
	d := startDaemon(t, env, filepath.Join(rt, "ollie.sock"))
	paths := func() []string {
		var ps []string
		for _, r := range llm.Requests() {
			ps = append(ps, r.Method+" "+r.Path)
		}
		return ps
	}
	want := []string{"GET /api/tags", "POST /api/show"}
	for deadline := time.Now().Add(testutil.HangTimeout); !slices.Equal(paths(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("before any session the model's server was asked %v, want %v\n%s", paths(), want, d.logText())
		}
	}
	fsys := d.dial()
	wr(t, fsys, "s/new", "cwd="+cwd+" name=w")
	wr(t, fsys, "s/w/prompt", "hello\n")
	if w := rd(t, fsys, "s/w/wait"); w != "idle\n" {
		t.Fatalf("wait: %q", w)
	}
	if got := paths(); !slices.Equal(got, append(want, "POST /api/chat")) {
		t.Errorf("after the first turn the model's server was asked %v, want %v and the chat", got, want)
	}
}
