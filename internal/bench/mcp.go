package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"ollie.dev/ollie/defaults"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/mcpconf"
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
	b, err := NewMCPBencher(r.ctx, MCPOptions{Exec: ex, MCP: filepath.Join(filepath.Dir(r.o.Exe), mcpconf.Program),
		Dir: dir, Server: []string{node, script, "stdio"}, Env: r.o.Env})
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
		Row{Key: "mcp.cold", What: "ollie mcp -- SERVER call, unsandboxed: the bridge and the server started, one call", Val: dur(st[3].P50), Note: n},
		Row{Key: "mcp.warm", What: "ollie mcp -url call, unsandboxed: one call to the server kept behind the proxy", Val: dur(st[4].P50), Note: n + "; floor: cold", Floor: "mcp.cold"},
		Row{Key: "mcp.toollist", What: fmt.Sprintf("context an MCP host loads for server-everything's tools/list (%d tools)", t.Tools),
			Val: Value{float64(t.ToolList), Count}, Note: "tokens, as characters / 4"},
		Row{Key: "mcp.tokens", What: "context the bridge costs: sk/mcp.md + the execute_code schema", Val: Value{float64(t.Bridge()), Count},
			Note: "tokens, for any number of servers", Floor: "mcp.toollist"},
	)
	return nil
}

// The MCP group compares one MCP tools/call through the bridge with the
// same operation as a plain t/ script, both as the model runs them (an
// execute_code call in the sandbox), and what each costs in context: the
// bridge's skill plus the execute_code schema against the server's tool
// list as an MCP host would load it. The operation is echo, the tool
// every reference server has: {"message": "hi"} gives "Echo: hi". The
// bridge runs as users run it, the program ollie-mcp.

// MCPOptions say what to measure the bridge with.
type MCPOptions struct {
	// Exec runs execute_code calls; t/mcp runs the ollie-mcp beside its
	// executable.
	Exec *execute.Executor
	// MCP is the bridge, ollie-mcp, run here unsandboxed: the proxy, the
	// cold and warm calls, the tool list.
	MCP string
	// Dir is scratch space: the session's cwd, tmp and t/ are made in it.
	Dir string
	// Server starts an MCP server over stdio that has an echo tool
	// (node .../server-everything/dist/index.js stdio). The sandbox
	// profile must let stages read and run it.
	Server []string
	// Env is added to the stages' environment and the bridge's.
	Env []string
}

// MCPTokens are context sizes, estimated.
type MCPTokens struct {
	Tools int // how many tools the server has
	// Skill and Schema are what the bridge puts in context: sk/mcp.md
	// and the execute_code tool (Description and Schema), which the
	// model has anyway.
	Skill, Schema int
	// ToolList is the server's tools/list result as JSON: what an MCP
	// host loads into context for this one server.
	ToolList int
	// Idx is the server's whole idx file, which the agent greps rather
	// than reads; a find returns a line or two of it.
	Idx int
}

// Bridge is what the bridge costs in context.
func (t MCPTokens) Bridge() int { return t.Skill + t.Schema }

// An MCPBencher runs the compared operations one at a time: `ollie bench
// -mcp` measures them, `go test -bench MCP ./cmd/ollie` loops over them.
type MCPBencher struct {
	o     MCPOptions
	spec  execute.Spec
	proxy *exec.Cmd
	url   string // the proxy's
}

// The servers' names in the bench's t/mcp.d/servers.json: the server,
// and the same server behind the proxy.
const (
	benchServer = "bench"
	benchProxy  = "benchproxy"
)

// NewMCPBencher starts the proxy and lays out a session in o.Dir: t/mcp
// as shipped, a server list naming o.Server and the proxy, and t/echo,
// the plain script.
func NewMCPBencher(ctx context.Context, o MCPOptions) (*MCPBencher, error) {
	if o.Exec == nil || o.MCP == "" || len(o.Server) == 0 || o.Dir == "" {
		return nil, errs.E(errs.Invalid, "mcp bench: needs an executor, the bridge, a server and a directory")
	}
	b := &MCPBencher{o: o, spec: execute.Spec{
		Cwd: filepath.Join(o.Dir, "cwd"), Tmp: filepath.Join(o.Dir, "tmp"), Tools: filepath.Join(o.Dir, "t"),
		Env: o.Env, Session: "mcp-bench",
	}}
	for _, d := range []string{b.spec.Cwd, b.spec.Tmp, filepath.Join(b.spec.Tools, "mcp.d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	mcpScript, err := fs.ReadFile(defaults.FS(), "t/mcp")
	if err != nil {
		return nil, err
	}
	if err := b.startProxy(ctx); err != nil {
		return nil, err
	}
	list, _ := json.Marshal(map[string]any{"mcpServers": map[string]mcpconf.Server{
		benchServer: {Command: o.Server[0], Args: o.Server[1:]},
		benchProxy:  {URL: b.url},
	}})
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"mcp", mcpScript},
		{"echo", []byte("#!/bin/sh\n# description: Echo the message.\n# args: MESSAGE\necho \"Echo: $1\"\n")},
		{"mcp.d/servers.json", list},
	} {
		if err := os.WriteFile(filepath.Join(b.spec.Tools, f.name), f.data, 0o755); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// bridge is the command of ollie-mcp with args, then the server's.
func (b *MCPBencher) bridge(ctx context.Context, args ...string) *exec.Cmd {
	if args[len(args)-1] == "--" {
		args = append(args, b.o.Server...)
	}
	cmd := exec.CommandContext(ctx, b.o.MCP, args...)
	cmd.Env = append(os.Environ(), b.o.Env...)
	return cmd
}

// startProxy runs `ollie-mcp -private proxy` with the server and reads
// its URL.
func (b *MCPBencher) startProxy(ctx context.Context) error {
	b.proxy = b.bridge(context.WithoutCancel(ctx), "-private", "-listen", "127.0.0.1:0", "proxy", "--")
	var stderr bytes.Buffer
	b.proxy.Stderr = &stderr
	out, err := b.proxy.StdoutPipe()
	if err != nil {
		return err
	}
	if err := b.proxy.Start(); err != nil {
		return err
	}
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		got <- strings.TrimSpace(line)
	}()
	select {
	case b.url = <-got:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	if !strings.HasPrefix(b.url, "http://") {
		b.Close()
		return errs.E(errs.Other, "mcp bench: the proxy gave no URL: "+strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Close ends the proxy and its server.
func (b *MCPBencher) Close() error {
	if b.proxy == nil || b.proxy.Process == nil {
		return nil
	}
	b.proxy.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { b.proxy.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.proxy.Process.Kill()
		<-done
	}
	return nil
}

// Script runs the echo as a plain t/ script through execute_code.
func (b *MCPBencher) Script(ctx context.Context) error {
	return b.run(ctx, `{"steps":[{"tool":"echo","args":["hi"]}]}`)
}

// Bridge runs the echo as an MCP call through t/mcp and execute_code.
func (b *MCPBencher) Bridge(ctx context.Context) error { return b.call(ctx, benchServer) }

// Proxied runs the same call against the server behind the proxy.
func (b *MCPBencher) Proxied(ctx context.Context) error { return b.call(ctx, benchProxy) }

func (b *MCPBencher) call(ctx context.Context, server string) error {
	return b.run(ctx, `{"steps":[{"tool":"mcp","args":["call","`+server+`","echo","{\"message\":\"hi\"}"]}]}`)
}

func (b *MCPBencher) run(ctx context.Context, args string) error {
	res, err := b.o.Exec.Run(ctx, b.spec, []byte(args))
	if err != nil {
		return err
	}
	return echoed(res.String(), res.Failed)
}

// echoed checks what an echo call printed.
func echoed(out string, failed bool) error {
	if failed || out != "Echo: hi\n" {
		return errs.E(errs.Other, "mcp bench: "+strings.TrimSpace(out))
	}
	return nil
}

// echoArgs call echo, printing its text.
var echoArgs = []string{"-text", "call", "echo", `{"message":"hi"}`}

// Cold runs ollie-mcp, which starts the server, calls echo and stops it.
func (b *MCPBencher) Cold(ctx context.Context) error {
	out, err := b.bridge(ctx, append(echoArgs, "--")...).CombinedOutput()
	return echoed(string(out), err != nil)
}

// Warm runs ollie-mcp against the server kept behind the proxy.
func (b *MCPBencher) Warm(ctx context.Context) error {
	out, err := b.bridge(ctx, append([]string{"-url", b.url}, echoArgs...)...).CombinedOutput()
	return echoed(string(out), err != nil)
}

// Tokens estimates the context sizes, the tool list and idx as
// ollie-mcp prints and writes them.
func (b *MCPBencher) Tokens(ctx context.Context) (MCPTokens, error) {
	idx := filepath.Join(b.o.Dir, "bench.idx")
	cmd := b.bridge(ctx, "-idx", idx, "tools", "--")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return MCPTokens{}, fmt.Errorf("mcp bench: tools: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var list struct{ Tools []json.RawMessage }
	var compact bytes.Buffer
	if err := json.Unmarshal(out, &list); err != nil {
		return MCPTokens{}, err
	}
	if err := json.Compact(&compact, out); err != nil {
		return MCPTokens{}, err
	}
	idxText, err := os.ReadFile(idx)
	if err != nil {
		return MCPTokens{}, err
	}
	skill, err := fs.ReadFile(defaults.FS(), "sk/mcp.md")
	if err != nil {
		return MCPTokens{}, err
	}
	return MCPTokens{
		Tools:    len(list.Tools),
		Skill:    estimateTokens(string(skill)),
		Schema:   estimateTokens(execute.Schema + execute.Description),
		ToolList: estimateTokens(compact.String()),
		Idx:      estimateTokens(string(idxText)),
	}, nil
}

// estimateTokens is len(s)/4, rounded up.
func estimateTokens(s string) int { return (len(s) + 3) / 4 }
