package defaults_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/mcpbridge/mcptest"
	"ollie.dev/ollie/internal/testutil"
)

// maxFixedTokens bounds what every request of the shipped agent carries
// before the conversation: the system prompt and the execute_code tool, in
// o200k_base. MCP hosts pay 1.1-1.7k for server-everything's tool list
// alone, 8-16k for git-mcp-server's.
const maxFixedTokens = 600

// TestTokenEconomy measures the fixed overhead exactly as the backend
// receives it (the system message and the tools array of the first request
// of a default session, from the request body) with the real tokenizer,
// and checks that every tool of t/ is still named in it, with where to
// read the rest. docs/bench.md and docs/mcp.md state the counts.
func TestTokenEconomy(t *testing.T) {
	mcptest.Node(t)
	f := newTree(t, &llmtest.Script{Rules: []llmtest.Rule{{If: `.`, Then: llmtest.Turn{Text: "ok"}}}})
	// A fixed working directory, so the count does not move with the
	// test's temporary names.
	cwd := os.TempDir() + "/ollie-token-economy/project"
	if err := os.MkdirAll(cwd, 0755); err != nil {
		t.Fatal(err)
	}
	f.cwd = cwd
	id := f.newSession("tokens")
	// Before the first turn, systemprompt is already what it will send,
	// with a true size, and cfg names the model in use.
	before := readTree(t, f, "s/"+id+"/systemprompt")
	if st, err := os.Stat(f.mnt + "/s/" + id + "/systemprompt"); err != nil || st.Size() != int64(len(before)) || len(before) == 0 {
		t.Errorf("systemprompt before the first turn: stat %v %v, read %d bytes", st, err, len(before))
	}
	if err := f.fsys.WriteFile(ctx, "s/"+id+"/prompt", []byte("hi\n"), 0); err != nil {
		t.Fatal(err)
	}
	if w := readTree(t, f, "s/"+id+"/wait"); w != "idle\n" {
		t.Fatalf("wait = %q", w)
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools json.RawMessage `json:"tools"`
	}
	var sent []byte
	model := ""
	for _, r := range f.llm.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/chat/completions") {
			sent, model = r.Body, r.Model
			break
		}
	}
	// cfg names the model the request went to, which no setting named.
	if cfg := readTree(t, f, "s/"+id+"/cfg"); model == "" || !strings.Contains(cfg, "\nmodel="+model+"\n") {
		t.Errorf("cfg does not show the model in use (%q):\n%s", model, cfg)
	}
	if err := json.Unmarshal(sent, &body); err != nil {
		t.Fatalf("%v: %s", err, sent)
	}
	if len(body.Messages) == 0 || body.Messages[0].Role != "system" || len(body.Tools) == 0 {
		t.Fatalf("the first request has no system message or no tools: %s", sent)
	}
	system := body.Messages[0].Content
	if before != system {
		t.Errorf("systemprompt before the first turn differs from the system message sent:\n%q\n%q", before, system)
	}
	if sp := readTree(t, f, "s/"+id+"/systemprompt"); sp != system {
		t.Errorf("systemprompt differs from the system message sent:\n%q\n%q", sp, system)
	}
	ents, err := os.ReadDir(f.cfg.ConfigDir + "/t")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.Contains(system, " "+e.Name()) {
			t.Errorf("the system prompt does not name the tool %s:\n%s", e.Name(), system)
		}
	}
	for _, want := range []string{"$OLLIE/t/idx", "$OLLIE/sk/"} {
		if !strings.Contains(system, want) {
			t.Errorf("the system prompt does not point at %s", want)
		}
	}
	fixed := system + string(body.Tools)
	o200k, cl100k := mcptest.Tokens(t, "o200k_base", fixed), mcptest.Tokens(t, "cl100k_base", fixed)
	sys, tool := mcptest.Tokens(t, "o200k_base", system), mcptest.Tokens(t, "o200k_base", string(body.Tools))
	t.Logf("fixed overhead: %d tokens o200k_base (system prompt %d, execute_code %d), %d cl100k_base", o200k, sys, tool, cl100k)
	if o200k > maxFixedTokens {
		t.Errorf("the fixed overhead is %d tokens in o200k_base, over %d", o200k, maxFixedTokens)
	}
	// The docs state the numbers; they must be the ones measured.
	claim := fmt.Sprintf("%d tokens in o200k_base (%d cl100k_base)", o200k, cl100k)
	for _, doc := range []string{"../docs/bench.md", "../docs/mcp.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), claim) {
			t.Errorf("%s does not say %q", doc, claim)
		}
	}
}

// TestSystemPromptFollowsChanges: systemprompt is rendered again after the
// changes that make the next request's differ, before any turn.
func TestSystemPromptFollowsChanges(t *testing.T) {
	f := newTree(t, nil)
	id := f.newSession("sp")
	before := readTree(t, f, "s/"+id+"/systemprompt")
	if !strings.Contains(before, " file_read ") {
		t.Fatalf("systemprompt of a new session:\n%s", before)
	}
	tool := "#!/bin/sh\n# description: Say hello\n# args: NAME\necho hello \"$1\"\n"
	if err := f.fsys.WriteFile(ctx, "t/hello_world", []byte(tool), 0755); err != nil {
		t.Fatal(err)
	}
	// Its stat follows the change without an open (rendered in the
	// background after the commit), then its read.
	spPath := f.mnt + "/s/" + id + "/systemprompt"
	testutil.Until(t, "the stat of systemprompt to count t/hello_world", func() bool {
		st, err := os.Stat(spPath)
		return err == nil && st.Size() == int64(len(before))+int64(len(" hello_world"))
	})
	if sp := readTree(t, f, "s/"+id+"/systemprompt"); !strings.Contains(sp, " hello_world") {
		t.Errorf("systemprompt after adding t/hello_world:\n%s", sp)
	}
	if err := os.WriteFile(f.cfg.ConfigDir+"/p/terse.md", []byte("Answer in one word. cwd={{cwd}}\n"), 0600); err != nil {
		t.Fatal(err)
	}
	if err := f.fsys.WriteFile(ctx, "a/terse.json", []byte(`{"prompt":[{"file":"terse.md"}]}`), 0600); err != nil {
		t.Fatal(err)
	}
	if err := f.fsys.WriteFile(ctx, "s/"+id+"/cfg", []byte("agent=terse\n"), 0); err != nil {
		t.Fatal(err)
	}
	want := "Answer in one word. cwd=" + f.cwd + "\n"
	if st, err := os.Stat(f.mnt + "/s/" + id + "/systemprompt"); err != nil || st.Size() != int64(len(want)) {
		t.Errorf("stat of systemprompt after agent=terse: %v %v, want size %d", st, err, len(want))
	}
	if sp := readTree(t, f, "s/"+id+"/systemprompt"); sp != want {
		t.Errorf("systemprompt after agent=terse = %q, want %q", sp, want)
	}
}
