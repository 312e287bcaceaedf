package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/mcpbridge"
	"ollie.dev/ollie/internal/mcpbridge/mcptest"
)

// mcpBenchOptions: this test binary is the sandbox helper and, with
// OLLIE_TEST_MAIN=1 in the stages' environment, the ollie t/mcp runs.
func mcpBenchOptions(tb testing.TB) mcpbridge.BenchOptions {
	tb.Helper()
	server := mcptest.EverythingCmd(tb)
	sb := config.DefaultSandbox()
	ws := sb.Profiles["workspace"]
	ws.Read = append(ws.Read, mcptest.Dir()) // the npm packages, under $HOME
	sb.Profiles["workspace"] = ws
	dir, _ := filepath.EvalSymlinks(tb.TempDir())
	ex, err := execute.New(execute.Options{Helper: os.Args[0], Sandbox: sb, Home: os.Getenv("HOME"), Environ: os.Environ()})
	if err != nil {
		tb.Fatal(err)
	}
	return mcpbridge.BenchOptions{Exec: ex, Dir: dir, Server: server, Env: []string{"OLLIE_TEST_MAIN=1"}}
}

// TestMCPBench runs what `ollie bench` shows, a few times, and checks the
// claims the numbers make: the bridge works in the sandbox, and costs
// less context than the server's tool list.
func TestMCPBench(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("timing")
	}
	o := mcpBenchOptions(t)
	o.Runs = 1
	r, err := mcpbridge.Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", r)
	tk := r.Tokens
	if tk.Tools < 5 || tk.Skill == 0 || tk.Schema == 0 || tk.Idx == 0 {
		t.Errorf("token counts: %+v", tk)
	}
	if tk.Bridge() >= tk.ToolList {
		t.Errorf("the bridge costs %d tokens, the server's tool list %d", tk.Bridge(), tk.ToolList)
	}
	// How the times compare is for ollie bench -only mcp to report, over
	// repeated samples; one sample in a parallel test proves nothing.
	for name, d := range map[string]time.Duration{"warm": r.Warm, "cold": r.Cold, "script": r.Script, "proxied": r.Proxied, "bridge": r.Bridge} {
		if d <= 0 {
			t.Errorf("no %s call was measured", name)
		}
	}
}

func BenchmarkMCP(b *testing.B) {
	ctx := context.Background()
	bn, err := mcpbridge.NewBencher(ctx, mcpBenchOptions(b))
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
