package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/mcpbridge"
)

// mcpRuns caps the runs: a bridge call starts a Node server (~0.5 s).
func mcpRuns(n int) int { return max(3, min(n/100, 20)) }

// groupMCP: an MCP tools/call through t/mcp next to a plain t/ script
// doing the same echo, against server-everything as ./test.sh installs
// it. The execute_code calls are made by an executor in this process
// (the stages are real processes in the real sandbox), not by the
// daemon: this group measures the bridge, not the runtime.
func (r *run) groupMCP() error {
	npm := os.Getenv("OLLIE_TEST_NPM")
	if npm == "" {
		home, _ := os.UserHomeDir()
		npm = filepath.Join(home, ".cache", "ollie-test", "npm")
	}
	script := filepath.Join(npm, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(script); err != nil || serr != nil {
		return fmt.Errorf("needs node and server-everything in %s (./test.sh installs them)", npm)
	}
	sb := config.DefaultSandbox()
	ws := sb.Profiles["workspace"]
	ws.Read = append(ws.Read, npm) // the server's files, under $HOME
	sb.Profiles["workspace"] = ws
	home, dir := filepath.Join(r.dir, "mcp-home"), filepath.Join(r.dir, "mcp")
	for _, d := range []string{home, dir} {
		if err := os.MkdirAll(d, 0700); err != nil {
			return err
		}
	}
	ex, err := execute.New(execute.Options{Exe: r.o.Exe, Sandbox: sb, Home: home, Environ: append(os.Environ(), r.o.Env...)})
	if err != nil {
		return err
	}
	b, err := mcpbridge.NewBencher(r.ctx, mcpbridge.BenchOptions{Exec: ex, Dir: dir, Server: []string{node, script, "stdio"}, Env: r.o.Env})
	if err != nil {
		return err
	}
	defer b.Close()
	op := func(f func(context.Context) error) func() error { return func() error { return f(r.ctx) } }
	st, err := MeasureAll(mcpRuns(r.o.N), op(b.Script), op(b.Bridge), op(b.Proxied), op(b.Cold), op(b.Warm))
	if err != nil {
		return err
	}
	t, err := b.Tokens(r.ctx)
	if err != nil {
		return err
	}
	n := fmt.Sprintf("p50 of %d, interleaved", st[0].N)
	r.add(
		Row{Key: "mcp.script", What: "execute_code: a t/ script doing echo (sandboxed)", Val: dur(st[0].P50), Note: n},
		Row{Key: "mcp.bridge", What: "execute_code: t/mcp call everything echo (a Node server starts per call)", Val: dur(st[1].P50), Note: n, Floor: "mcp.script"},
		Row{Key: "mcp.proxied", What: "the same, the server kept behind ollie mcp proxy", Val: dur(st[2].P50), Note: n + "; floor: the bridge", Floor: "mcp.bridge"},
		Row{Key: "mcp.cold", What: "the bridge's own part, unsandboxed: dial+call+close", Val: dur(st[3].P50), Note: n},
		Row{Key: "mcp.warm", What: "one tools/call on an open MCP session", Val: dur(st[4].P50), Note: n + "; floor: cold", Floor: "mcp.cold"},
		Row{Key: "mcp.toollist", What: fmt.Sprintf("context an MCP host loads for server-everything's tools/list (%d tools)", t.Tools),
			Val: Value{float64(t.ToolList), Count}, Note: "tokens, as characters / 4"},
		Row{Key: "mcp.tokens", What: "context the bridge costs: sk/mcp.md + the execute_code schema", Val: Value{float64(t.Bridge()), Count},
			Note: "tokens, for any number of servers", Floor: "mcp.toollist"},
	)
	return nil
}
