package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
)

// TestDeepStreamEventLeavesTheDaemonUp: a model server that sends an
// event of 16 MiB of "[" (in an OpenAI stream, then in an Anthropic one)
// once killed the daemon with a stack overflow in the goroutine decoding
// it. Now that turn fails with the stream's error, and the same daemon
// runs the next turn.
func TestDeepStreamEventLeavesTheDaemonUp(t *testing.T) {
	deep := strings.Repeat("[", 16<<20)
	llm := llmtest.NewTest(t, &llmtest.Script{
		Rules: []llmtest.Rule{
			{If: `^deep openai\s*$`, Then: llmtest.Turn{Raw: "data: " + deep + "\n\n"}},
			{If: `^deep anthropic\s*$`, Then: llmtest.Turn{Raw: "event: content_block_delta\ndata: " + deep + "\n\n"}},
		},
		Default: &llmtest.Turn{Text: "still here"},
	})
	home, cwd, sock, env := crashHome(t, llm)
	cfg := filepath.Join(home, ".config", "ollie", "ollie.json")
	os.MkdirAll(filepath.Dir(cfg), 0700)
	if err := os.WriteFile(cfg, []byte(`{"backends": [
		{"name": "o", "kind": "openai", "base_url": "`+llm.URL+`/v1", "model": "llmtest"},
		{"name": "a", "kind": "anthropic", "base_url": "`+llm.URL+`", "model": "llmtest"}]}`), 0600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, env, sock)
	pid := d.cmd.Process.Pid
	fsys := d.dial()
	// Both at once: the agent retries a stream that failed (five times,
	// waiting longer each time), so each takes half a minute.
	kinds := []string{"openai", "anthropic"}
	for _, kind := range kinds {
		name := "deep-" + kind
		wr(t, fsys, "s/new", "cwd="+cwd+" name="+name+" backend="+kind[:1])
		wr(t, fsys, "s/"+name+"/prompt", "deep "+kind+"\n")
	}
	for _, kind := range kinds {
		name := "deep-" + kind
		if w := rd(t, fsys, "s/"+name+"/wait"); !strings.Contains(w, "not JSON") {
			t.Errorf("%s: wait = %q, want the turn's error, a stream event that is not JSON", kind, w)
		}
		wr(t, fsys, "s/"+name+"/prompt", "again\n")
		if w := rd(t, fsys, "s/"+name+"/wait"); w != "idle\n" {
			t.Errorf("%s: the next turn: wait = %q", kind, w)
		}
		if r := rd(t, fsys, "s/"+name+"/reply"); r != "still here\n" {
			t.Errorf("%s: the next turn's reply = %q", kind, r)
		}
	}
	if d.cmd.Process.Pid != pid || d.cmd.ProcessState != nil {
		t.Errorf("the daemon did not stay up")
	}
}
