package mcpbridge

import (
	"context"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"ollie.dev/ollie/defaults"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/execute"
)

// The benchmark compares one MCP tools/call through the bridge with the
// same operation as a plain t/ script, both as the model runs them (an
// execute_code call in the sandbox), and what each costs in context:
// the bridge's skill plus the execute_code schema against the server's
// tool list as an MCP host would load it. The operation is echo, the
// tool every reference server has: {"message": "hi"} gives "Echo: hi".

// BenchOptions say what to measure with.
type BenchOptions struct {
	// Exec runs execute_code calls; its helper must be an ollie binary,
	// which t/mcp runs as OLLIE_BIN.
	Exec *execute.Executor
	// Dir is scratch space: the session's cwd, tmp and t/ are made in it.
	Dir string
	// Server starts an MCP server over stdio that has an echo tool
	// (node .../server-everything/dist/index.js stdio). The sandbox
	// profile must let stages read and run it.
	Server []string
	// Env is added to the stages' environment.
	Env []string
}

// Tokens are context sizes, estimated.
type Tokens struct {
	Tools int // how many tools the server has
	// Bridge is what the bridge puts in context: sk/mcp.md and the
	// execute_code tool (Description and Schema), which the model has
	// anyway.
	Skill, Schema int
	// ToolList is the server's tools/list result as JSON: what an MCP
	// host loads into context for this one server.
	ToolList int
	// Idx is the server's whole idx file, which the agent greps rather
	// than reads; a find returns a line or two of it.
	Idx int
}

// Bridge is what the bridge costs in context.
func (t Tokens) Bridge() int { return t.Skill + t.Schema }

// A Bencher runs the compared operations one at a time: `ollie bench
// -mcp` measures them (internal/bench), `go test -bench MCP ./cmd/ollie`
// loops over them.
type Bencher struct {
	o     BenchOptions
	spec  execute.Spec
	conn  *Conn
	tg    Target
	proxy *http.Server
}

// benchServer is the server's name in the bench's t/mcp.d/servers.json,
// benchProxy the same server behind a proxy.
const (
	benchServer = "bench"
	benchProxy  = "benchproxy"
)

// NewBencher lays out a session in o.Dir: t/mcp as shipped, a server
// list naming o.Server, and t/echo, the plain script.
func NewBencher(ctx context.Context, o BenchOptions) (*Bencher, error) {
	if o.Exec == nil || len(o.Server) == 0 || o.Dir == "" {
		return nil, errs.E(errs.Invalid, "mcp bench: needs an executor, a server and a directory")
	}
	b := &Bencher{o: o, spec: execute.Spec{
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
	b.tg = Server{Command: o.Server[0], Args: o.Server[1:]}.Target(benchServer, os.Getenv)
	if b.conn, err = Dial(ctx, b.tg); err != nil {
		return nil, err
	}
	url, err := b.startProxy(ctx)
	if err != nil {
		b.conn.Close()
		return nil, err
	}
	list, _ := json.Marshal(serversFile{MCPServers: Servers{
		benchServer: {Command: o.Server[0], Args: o.Server[1:]},
		benchProxy:  {URL: url},
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

// startProxy serves the warm session over streamable HTTP on loopback.
func (b *Bencher) startProxy(ctx context.Context) (string, error) {
	s, err := NewProxy(ctx, b.conn)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	b.proxy = &http.Server{Handler: HTTPHandler(s)}
	go b.proxy.Serve(ln)
	return "http://" + ln.Addr().String() + "/", nil
}

// Close ends the proxy and the warm session.
func (b *Bencher) Close() error {
	if b.proxy != nil {
		b.proxy.Close()
	}
	return b.conn.Close()
}

// Script runs the echo as a plain t/ script through execute_code.
func (b *Bencher) Script(ctx context.Context) error {
	return b.run(ctx, `{"steps":[{"tool":"echo","args":["hi"]}]}`)
}

// Bridge runs the echo as an MCP call through t/mcp and execute_code.
func (b *Bencher) Bridge(ctx context.Context) error { return b.call(ctx, benchServer) }

// Proxied runs the same call against the server behind the proxy.
func (b *Bencher) Proxied(ctx context.Context) error { return b.call(ctx, benchProxy) }

func (b *Bencher) call(ctx context.Context, server string) error {
	return b.run(ctx, `{"steps":[{"tool":"mcp","args":["call","`+server+`","echo","{\"message\":\"hi\"}"]}]}`)
}

func (b *Bencher) run(ctx context.Context, args string) error {
	res, err := b.o.Exec.Run(ctx, b.spec, []byte(args))
	if err != nil {
		return err
	}
	if out := res.String(); res.Failed || out != "Echo: hi\n" {
		return errs.E(errs.Other, "mcp bench: "+strings.TrimSpace(out))
	}
	return nil
}

// Cold starts the server, calls echo and stops it, in this process.
func (b *Bencher) Cold(ctx context.Context) error {
	c, err := Dial(ctx, b.tg)
	if err != nil {
		return err
	}
	defer c.Close()
	return echo(ctx, c)
}

// Warm calls echo on the open session.
func (b *Bencher) Warm(ctx context.Context) error { return echo(ctx, b.conn) }

func echo(ctx context.Context, c *Conn) error {
	res, err := c.Call(ctx, "echo", json.RawMessage(`{"message":"hi"}`))
	if err != nil {
		return err
	}
	if got := CallText(res); got != "Echo: hi\n" {
		return errs.E(errs.Other, "mcp bench: echo gave "+quote(got))
	}
	return nil
}

// Tokens estimates the context sizes.
func (b *Bencher) Tokens(ctx context.Context) (Tokens, error) {
	tools, err := b.conn.Tools(ctx)
	if err != nil {
		return Tokens{}, err
	}
	list, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		return Tokens{}, err
	}
	skill, err := fs.ReadFile(defaults.FS(), "sk/mcp.md")
	if err != nil {
		return Tokens{}, err
	}
	return Tokens{
		Tools:    len(tools),
		Skill:    EstimateTokens(string(skill)),
		Schema:   EstimateTokens(execute.Schema + execute.Description),
		ToolList: EstimateTokens(string(list)),
		Idx:      EstimateTokens(string(Idx(tools))),
	}, nil
}

// EstimateTokens is len(s)/4, rounded up.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }
