package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/mcpconf"
)

// A Target says how to reach one server (mcpconf.Target).
type Target = mcpconf.Target

// Conn is a session with one server. Its methods may be called
// concurrently, as the SDK's ClientSession allows.
type Conn struct {
	name string
	cs   *mcp.ClientSession
}

// Version is what the bridge calls itself in the initialize handshake.
var Version = "0.1"

// closeGrace is how long Close waits for a stdio server to exit once its
// stdin is closed before it is sent SIGTERM. A well-behaved server exits
// at once; some (server-everything) keep timers running and never do,
// and a one-shot bridge must not pay seconds for them on every call.
const closeGrace = 200 * time.Millisecond

// Dial starts or connects to the server of t and runs the MCP handshake.
func Dial(ctx context.Context, t Target) (*Conn, error) {
	if t.Name == "" {
		t.Name = "server"
	}
	var tr mcp.Transport
	switch {
	case len(t.Command) > 0 && t.URL != "":
		return nil, errs.E(errs.Invalid, "mcp: both a command and a url")
	case len(t.Command) > 0:
		cmd := exec.Command(t.Command[0], t.Command[1:]...)
		cmd.Env, cmd.Dir, cmd.Stderr = t.Env, t.Dir, t.Stderr
		tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: closeGrace}
	case t.URL != "":
		hc := &http.Client{Transport: headerTransport{t.Headers, http.DefaultTransport}}
		// One request, one answer: the standalone SSE stream serves
		// notifications a one-shot bridge never waits for.
		tr = &mcp.StreamableClientTransport{Endpoint: t.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
	default:
		return nil, errs.E(errs.Invalid, "mcp: no server: give a command or a url")
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "ollie", Version: Version}, nil)
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		return nil, errs.E(errs.Unavailable, "mcp "+t.Name+": cannot connect", unwrap(err))
	}
	return &Conn{name: t.Name, cs: cs}, nil
}

// headerTransport adds fixed headers (an Authorization, say) to every
// request.
type headerTransport struct {
	h    map[string]string
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.h {
			r.Header.Set(k, v)
		}
	}
	return t.next.RoundTrip(r)
}

// Close ends the session; a stdio server is asked to exit by closing its
// stdin, then terminated.
func (c *Conn) Close() error { return c.cs.Close() }

// Session is the SDK's session, for what Conn does not wrap.
func (c *Conn) Session() *mcp.ClientSession { return c.cs }

// Instructions are what the server says about itself in the handshake.
func (c *Conn) Instructions() string {
	if r := c.cs.InitializeResult(); r != nil {
		return r.Instructions
	}
	return ""
}

// Tools lists every tool, following pages.
func (c *Conn) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	var all []*mcp.Tool
	for t, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, c.fail("tools/list", err)
		}
		all = append(all, t)
	}
	return all, nil
}

// Call calls tool name with args, a JSON object ("" or "null" for none).
// A result the server marks as an error is returned with an error whose
// text is the server's message.
func (c *Conn) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: name}
	if a := strings.TrimSpace(string(args)); a != "" && a != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(a), &obj); err != nil || obj == nil {
			return nil, errs.E(errs.Invalid, "mcp: arguments of "+name+" are not a JSON object: "+shorten(a, 80))
		}
		p.Arguments = json.RawMessage(a)
	}
	res, err := c.cs.CallTool(ctx, p)
	if err != nil {
		return nil, c.fail("tools/call "+name, err)
	}
	if res.IsError {
		return res, &ToolError{Server: c.name, Tool: name, Msg: errorText(res)}
	}
	return res, nil
}

// Resources lists the resources and resource templates.
func (c *Conn) Resources(ctx context.Context) ([]*mcp.Resource, []*mcp.ResourceTemplate, error) {
	if !c.has(func(s *mcp.ServerCapabilities) bool { return s.Resources != nil }) {
		return nil, nil, nil
	}
	var rs []*mcp.Resource
	for r, err := range c.cs.Resources(ctx, nil) {
		if err != nil {
			return nil, nil, c.fail("resources/list", err)
		}
		rs = append(rs, r)
	}
	var ts []*mcp.ResourceTemplate
	for t, err := range c.cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			return nil, nil, c.fail("resources/templates/list", err)
		}
		ts = append(ts, t)
	}
	return rs, ts, nil
}

// Read reads the resource at uri.
func (c *Conn) Read(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	r, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, c.fail("resources/read "+uri, err)
	}
	return r, nil
}

// Prompts lists the prompts.
func (c *Conn) Prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	if !c.has(func(s *mcp.ServerCapabilities) bool { return s.Prompts != nil }) {
		return nil, nil
	}
	var ps []*mcp.Prompt
	for p, err := range c.cs.Prompts(ctx, nil) {
		if err != nil {
			return nil, c.fail("prompts/list", err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// Prompt gets prompt name filled in with args.
func (c *Conn) Prompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	r, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, c.fail("prompts/get "+name, err)
	}
	return r, nil
}

func (c *Conn) has(f func(*mcp.ServerCapabilities) bool) bool {
	r := c.cs.InitializeResult()
	return r == nil || r.Capabilities == nil || f(r.Capabilities)
}

// fail words an error of a request: the server's own message when it
// answered with one, with a kind from its JSON-RPC code.
func (c *Conn) fail(what string, err error) error {
	kind := errs.Other
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		switch we.Code {
		case jsonrpc.CodeInvalidParams, jsonrpc.CodeInvalidRequest:
			kind = errs.Invalid
		case jsonrpc.CodeMethodNotFound:
			kind = errs.Unsupported
		}
		if strings.Contains(strings.ToLower(we.Message), "not found") {
			kind = errs.NotExist
		}
	case errors.Is(err, context.Canceled):
		kind = errs.Interrupted
	case errors.Is(err, context.DeadlineExceeded):
		kind = errs.Timeout
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF):
		kind = errs.Unavailable
	}
	return errs.E(kind, "mcp "+c.name+": "+what, unwrap(err))
}

// unwrap digs out the server's message from the SDK's wrapping
// ("calling \"tools/call\": ..."), which only repeats what fail says.
func unwrap(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return errors.New(we.Message)
	}
	return err
}

// A ToolError is a tool's own failure: the server ran the call (or
// refused its arguments) and marked the result as an error.
type ToolError struct {
	Server, Tool string
	Msg          string // the server's message
}

func (e *ToolError) Error() string { return e.Server + ": " + e.Tool + ": " + e.Msg }

// errorText is the message of a result the server marked as an error.
func errorText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok && strings.TrimSpace(t.Text) != "" {
			parts = append(parts, strings.TrimSpace(t.Text))
		}
	}
	if len(parts) == 0 {
		return "the tool failed and gave no message"
	}
	return strings.Join(parts, "; ")
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
