package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/mcpbridge/mcptest"
)

// ollieHome is a home for a daemon in a process of its own: its
// environment (the model's address to add), socket and a working directory.
func ollieHome(t *testing.T) (home, cwd, sock string, env []string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, cwd = filepath.Join(root, "home"), filepath.Join(root, "proj")
	os.MkdirAll(cwd, 0o700)
	os.MkdirAll(filepath.Join(home, ".config", "ollie"), 0o700)
	rt, _ := os.MkdirTemp("", "olm")
	t.Cleanup(func() { os.RemoveAll(rt) })
	return home, cwd, filepath.Join(rt, "ollie.sock"), []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, *mcp.CallToolResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res
}

// TestMCPServeDrivesOllie: an MCP host (the Go SDK's client) starts
// `ollie mcp serve` and runs an agent session through it.
func TestMCPServeDrivesOllie(t *testing.T) {
	t.Parallel()
	llm := llmtest.NewTest(t, &llmtest.Script{Default: &llmtest.Turn{Text: "hello from the scripted model"}})
	_, cwd, sock, env := ollieHome(t)
	env = append(env, "OLLAMA_HOST="+llm.URL)
	startDaemon(t, env, sock)

	cmd := exec.Command(os.Args[0], "mcp", "-addr", sock, "serve")
	cmd.Env = append(env, "OLLIE_TEST_MAIN=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "ollie runs LLM agent sessions") {
		t.Errorf("instructions: %q", ins)
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, " "); got != "ask new_session prompt read sessions wait write" {
		t.Errorf("tools: %s", got)
	}

	// The id is the daemon's; the name works as well.
	id, res := callText(t, cs, "new_session", map[string]any{"cwd": cwd, "name": "viamcp"})
	if res.IsError || id == "" || strings.ContainsAny(id, " \n") {
		t.Fatalf("new_session: %q error=%v", id, res.IsError)
	}
	reply, res := callText(t, cs, "ask", map[string]any{"session": "viamcp", "prompt": "hi there"})
	if res.IsError || reply != "hello from the scripted model\n" {
		t.Fatalf("ask: %q error=%v", reply, res.IsError)
	}
	_, res = callText(t, cs, "ask", map[string]any{"cwd": cwd, "prompt": "in a new session"})
	var out struct{ Session, State, Reply string }
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &out); res.IsError || out.Session == "" || out.Session == "viamcp" || out.State != "idle" || out.Reply != "hello from the scripted model\n" {
		t.Errorf("ask without a session: %s error=%v", b, res.IsError)
	}
	if txt, _ := callText(t, cs, "prompt", map[string]any{"session": "viamcp", "prompt": "again"}); !strings.Contains(txt, "submitted") {
		t.Errorf("prompt: %q", txt)
	}
	if txt, _ := callText(t, cs, "wait", map[string]any{"session": "viamcp"}); txt != "hello from the scripted model\n" {
		t.Errorf("wait: %q", txt)
	}
	if txt, _ := callText(t, cs, "sessions", nil); !strings.Contains(txt, id+"\tidle") || !strings.Contains(txt, out.Session+"\t") {
		t.Errorf("sessions:\n%s", txt)
	}
	if txt, _ := callText(t, cs, "read", map[string]any{"path": "/s/viamcp/chat"}); !strings.Contains(txt, "user: hi there\n") || !strings.Contains(txt, "user: again\n") {
		t.Errorf("read chat:\n%s", txt)
	}
	if txt, res := callText(t, cs, "write", map[string]any{"path": "s/viamcp/ctl", "data": "frobnicate"}); !res.IsError || !strings.Contains(txt, "frobnicate") {
		t.Errorf("a bad ctl write: %q error=%v", txt, res.IsError)
	}
	if txt, res := callText(t, cs, "ask", map[string]any{"session": "nosuch", "prompt": "x"}); !res.IsError || !strings.Contains(txt, "not found") {
		t.Errorf("ask a missing session: %q error=%v", txt, res.IsError)
	}
	if txt, res := callText(t, cs, "new_session", map[string]any{"cwd": "relative/dir"}); !res.IsError || !strings.Contains(txt, "absolute") {
		t.Errorf("new_session with a relative cwd: %q error=%v", txt, res.IsError)
	}
}

// TestMCPToolInSandboxedSession: the model calls an MCP server's tools
// through t/mcp, inside the sandbox: the stage runs the ollie binary,
// which starts node and speaks MCP to it over pipes.
func TestMCPToolInSandboxedSession(t *testing.T) {
	t.Parallel()
	ev := mcptest.EverythingCmd(t)
	steps := func(stages ...map[string]any) llmtest.Call {
		b, _ := json.Marshal(map[string]any{"steps": stages})
		return llmtest.Call{Name: "execute_code", Args: b}
	}
	tool := func(args ...string) map[string]any { return map[string]any{"tool": "mcp", "args": args} }
	home, cwd, sock, env := ollieHome(t)
	cdir := filepath.Join(home, ".config", "ollie")
	llm := llmtest.NewTest(t, &llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Looking for a tool.", Calls: []llmtest.Call{steps(tool("find", "sum"))}},
		{Calls: []llmtest.Call{steps(
			map[string]any{"language": "sh", "code": `echo '{"a": 40, "b": 2}'`},
			tool("call", "everything", "get-sum"))}},
		{Calls: []llmtest.Call{steps(tool("call", "everything", "get-sum", `{"a": "x"}`))}},
		{Calls: []llmtest.Call{steps(tool("servers"))}},
		{Calls: []llmtest.Call{steps(map[string]any{"language": "sh", "code": "cat " + filepath.Join(cdir, "mcp.json")})}},
		{Text: "The sum is 42."},
	}})
	env = append(env, "OLLAMA_HOST="+llm.URL)
	// The private list, with a key: the proxy's and yours, never a stage's.
	os.WriteFile(filepath.Join(cdir, "mcp.json"), []byte(`{"mcpServers": {"private": {"command": "x", "env": {"KEY": "SECRET-VALUE"}}}}`), 0o600)
	// The npm packages live under $HOME, which the sandbox hides: the
	// profile reads them, as a user's would read a global node_modules.
	cfg, _ := json.Marshal(map[string]any{"sandbox": map[string]any{
		"profiles": map[string]any{"workspace": map[string]any{"extends": "workspace", "read": []string{mcptest.Dir()}}}}})
	os.WriteFile(filepath.Join(cdir, "ollie.json"), cfg, 0o600)
	list, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": ev[1:]}}})
	os.MkdirAll(filepath.Join(cdir, "t", "mcp.d"), 0o755)
	os.WriteFile(filepath.Join(cdir, "t", "mcp.d", "servers.json"), list, 0o644)

	fsys := startDaemon(t, env, sock).dial()
	wr(t, fsys, "s/new", "cwd="+cwd+" name=mcpuser")
	// The stage's ollie is this test binary, which is ollie only so.
	wr(t, fsys, "s/mcpuser/env", "OLLIE_TEST_MAIN=1\n")
	wr(t, fsys, "s/mcpuser/prompt", "what is 40 + 2? use the MCP server\n")
	if w := rd(t, fsys, "s/mcpuser/wait"); w != "idle\n" {
		t.Fatalf("wait = %q\n%s", w, rd(t, fsys, "s/mcpuser/chat"))
	}
	if r := rd(t, fsys, "s/mcpuser/reply"); r != "The sum is 42.\n" {
		t.Errorf("reply = %q", r)
	}
	var results []string
	reqs := llm.Requests()
	for _, r := range reqs[1:] {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
			results = append(results, r.Messages[n-1].Text)
		}
	}
	if len(results) != 5 {
		t.Fatalf("%d tool results sent back, want 5\n%s", len(results), rd(t, fsys, "s/mcpuser/chat"))
	}
	if want := "everything get-sum: Returns the sum of two numbers; args: a:number b:number\n"; results[0] != want {
		t.Errorf("mcp find sum gave %q, want %q", results[0], want)
	}
	if want := "The sum of 40 and 2 is 42.\n"; results[1] != want {
		t.Errorf("mcp call gave %q, want %q", results[1], want)
	}
	if !strings.Contains(results[2], "error: stage 1 (tool mcp) exited with status 1") ||
		!strings.Contains(results[2], "everything: get-sum: MCP error -32602: Input validation error") {
		t.Errorf("a failing call gave:\n%s", results[2])
	}
	if want := "everything: (no description) (stdio node /"; !strings.HasPrefix(results[3], want) || strings.Contains(results[3], "private") {
		t.Errorf("mcp servers gave %q, want the agents' list only", results[3])
	}
	if !strings.Contains(results[4], "Permission denied") || strings.Contains(results[4], "SECRET-VALUE") {
		t.Errorf("a stage reading the private list:\n%s", results[4])
	}
}
