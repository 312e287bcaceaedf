package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/mcpbridge/mcptest"
	"ollie.dev/ollie/internal/mcpconf"
)

// mcpBenchOptions: this test binary is the sandbox helper and, through
// the link TestMain makes beside it, the ollie-mcp t/mcp runs.
func mcpBenchOptions(tb testing.TB) bench.MCPOptions {
	tb.Helper()
	server := mcptest.EverythingCmd(tb)
	sb := config.DefaultSandbox()
	ws := sb.Profiles["workspace"]
	ws.Read = append(ws.Read, mcptest.Dir()) // the npm packages, under $HOME
	sb.Profiles["workspace"] = ws
	dir, _ := filepath.EvalSymlinks(tb.TempDir())
	ex, err := execute.New(execute.Options{Exe: os.Args[0], Sandbox: sb, Home: os.Getenv("HOME"), Environ: os.Environ()})
	if err != nil {
		tb.Fatal(err)
	}
	return bench.MCPOptions{Exec: ex, MCP: filepath.Join(filepath.Dir(os.Args[0]), mcpconf.Program), Dir: dir, Server: server}
}

// TestMCPBench runs each operation `ollie bench -mcp` measures once and
// checks the claims the numbers make: the bridge works in the sandbox,
// directly and through the proxy, and costs less context than the
// server's tool list. How the times compare is for ollie bench -mcp to
// report, as ratios of interleaved samples; this asserts none.
func TestMCPBench(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Node servers")
	}
	ctx := context.Background()
	b, err := bench.NewMCPBencher(ctx, mcpBenchOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for name, op := range map[string]func(context.Context) error{"script": b.Script, "bridge": b.Bridge, "proxied": b.Proxied, "cold": b.Cold, "warm": b.Warm} {
		if err := op(ctx); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	tk, err := b.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Tools < 5 || tk.Skill == 0 || tk.Schema == 0 || tk.Idx == 0 {
		t.Errorf("token counts: %+v", tk)
	}
	if tk.Bridge() >= tk.ToolList {
		t.Errorf("the bridge costs %d tokens, the server's tool list %d", tk.Bridge(), tk.ToolList)
	}
}

func BenchmarkMCP(b *testing.B) {
	ctx := context.Background()
	bn, err := bench.NewMCPBencher(ctx, mcpBenchOptions(b))
	if err != nil {
		b.Fatal(err)
	}
	defer bn.Close()
	for _, op := range []struct {
		name string
		run  func(context.Context) error
	}{{"script", bn.Script}, {"bridge", bn.Bridge}, {"proxied", bn.Proxied}, {"cold", bn.Cold}, {"warm", bn.Warm}} {
		b.Run(op.name, func(b *testing.B) {
			for b.Loop() {
				if err := op.run(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
