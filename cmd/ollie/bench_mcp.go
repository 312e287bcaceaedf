package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/mcpbridge"
)

func init() {
	registerBench(&benchSection{
		name: "mcp",
		doc:  "an MCP tools/call through t/mcp next to a plain t/ script, and the context each costs",
		run:  benchMCP,
	})
}

// mcpRuns caps the runs: a bridge call starts a Node server (~0.6 s).
func mcpRuns(n int) int { return max(1, min(n/100, 20)) }

// benchMCP measures the "no MCP in the core" argument against
// server-everything, as test.sh installs it.
func benchMCP(b *benchEnv) ([]benchRow, error) {
	npm := os.Getenv("OLLIE_TEST_NPM")
	if npm == "" {
		home, _ := os.UserHomeDir()
		npm = filepath.Join(home, ".cache", "ollie-test", "npm")
	}
	script := filepath.Join(npm, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(script); err != nil || serr != nil {
		return []benchRow{{key: "mcp", op: "skipped", value: "needs node and server-everything in " + npm + " (./test.sh installs them)"}}, nil
	}
	sb := config.DefaultSandbox()
	ws := sb.Profiles["workspace"]
	ws.Read = append(ws.Read, npm) // the server's files, under $HOME
	sb.Profiles["workspace"] = ws
	home := filepath.Join(b.dir, "mcp-home")
	if err := os.MkdirAll(home, 0700); err != nil {
		return nil, err
	}
	ex, err := execute.New(execute.Options{Helper: b.exe, Sandbox: sb, Home: home, Environ: append(os.Environ(), b.exeEnv...)})
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.dir, "mcp")
	if err := os.MkdirAll(dir, 0700); err != nil {
		return nil, err
	}
	r, err := mcpbridge.Bench(b.ctx, mcpbridge.BenchOptions{Exec: ex, Dir: dir, Server: []string{node, script, "stdio"},
		Env: b.exeEnv, Runs: mcpRuns(b.n)})
	if err != nil {
		return nil, err
	}
	t := r.Tokens
	ms := func(d interface{ Microseconds() int64 }) string {
		return fmt.Sprintf("%9.1fms", float64(d.Microseconds())/1000)
	}
	return []benchRow{
		{key: "mcp.script", op: "execute_code: t/ script doing echo", value: ms(r.Script)},
		{key: "mcp.bridge", op: "execute_code: t/mcp call everything echo", value: ms(r.Bridge) + fmt.Sprintf("  %.0fx the script (a Node server starts each call)", float64(r.Bridge)/float64(r.Script))},
		{key: "mcp.proxied", op: "  the same, server kept behind ollie mcp proxy", value: ms(r.Proxied) + fmt.Sprintf("  %.1fx the script", float64(r.Proxied)/float64(r.Script))},
		{key: "mcp.warm", op: "  one tools/call on an open MCP session", value: ms(r.Warm)},
		{key: "mcp.tokens", op: "context: sk/mcp.md + execute_code schema", value: fmt.Sprintf("%9d tokens (chars/4), any number of servers", t.Bridge())},
		{key: "mcp.toollist", op: "context: server-everything's tools/list", value: fmt.Sprintf("%9d tokens for its %d tools, loaded by an MCP host", t.ToolList, t.Tools)},
	}, nil
}
