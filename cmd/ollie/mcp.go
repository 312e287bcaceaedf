package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"ollie.dev/ollie/internal/mcpbridge"
	"ollie.dev/ollie/internal/redact"
)

// mcpFlags are the flags of `ollie mcp`, given before the verb.
var mcpFlags struct {
	server  string
	servers listFlag
	url     string
	headers listFlag
	envs    listFlag
	text    bool
	idx     string
	timeout time.Duration
	listen  string
	private bool
	addrFlag
}

// listFlag is a flag that may be repeated.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func init() {
	f := &mcpFlags
	register(&command{
		name:  "mcp",
		args:  "[-s NAME | -url URL] [-text] [flags] VERB [ARG...] [-- COMMAND [ARG...]]",
		short: "use an MCP server from the command line, or serve ollie over MCP",
		long: `Talk to one MCP server: a configured one (-s NAME), a command to start
and talk to over stdio (everything after --), or a streamable HTTP endpoint
(-url). Results are JSON as the server sends them, or text with -text.

  tools               the tools; with -idx FILE also write their idx lines there
  schema TOOL         one tool, its whole input schema included
  call TOOL [JSON]    call a tool; the arguments object from JSON or stdin
  resources           the resources and resource templates
  read URI            a resource's contents
  prompts             the prompts
  prompt NAME [JSON]  a prompt, filled in with string arguments
  servers             the configured servers (never their env values)

  serve               ollie itself as an MCP server on stdin and stdout,
                      speaking 9P to the daemon (-addr)
  proxy               serve the server over streamable HTTP on -listen
                      (loopback), so a sandbox can use it without its secrets;
                      with -private only under a random path, whose URL
                      goes to stdout (how a session's t/mcp servers run)

Servers are named in $XDG_CONFIG_HOME/ollie/mcp.json (private: the sandbox
cannot read it) and t/mcp.d/servers.json (what agents see), in the
mcpServers form other MCP hosts use; -servers FILE reads others instead.
A failing call prints the server's message and exits 1. See docs/mcp.md.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.server, "s", "", "the configured server called `NAME`")
			fs.Var(&f.servers, "servers", "read the server list from `FILE` (repeatable; default mcp.json, t/mcp.d/servers.json)")
			fs.StringVar(&f.url, "url", "", "a streamable HTTP server at `URL`")
			fs.Var(&f.headers, "H", "add the HTTP `header` 'Key: value' (repeatable)")
			fs.Var(&f.envs, "e", "-- COMMAND: set `KEY=VALUE` in its environment (repeatable)")
			fs.BoolVar(&f.text, "text", false, "print text: idx lines for tools, text content for calls")
			fs.StringVar(&f.idx, "idx", "", "tools: also write the idx lines to `FILE`")
			fs.DurationVar(&f.timeout, "timeout", 0, "give up after `D` (default: never)")
			fs.StringVar(&f.listen, "listen", "127.0.0.1:7801", "proxy: serve on `ADDR`")
			fs.BoolVar(&f.private, "private", false, "proxy: serve under a random path only, and print the URL on stdout")
			f.addrFlag.declare(fs)
		},
		run: runMCP,
	})
}

func runMCP(ctx context.Context, env *Env, args []string) error {
	f := &mcpFlags
	args, command := splitCommand(args)
	if len(args) == 0 {
		return usagef("no verb")
	}
	verb, args := args[0], args[1:]
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	switch verb {
	case "servers":
		return mcpServers(env, args)
	case "serve":
		return mcpServe(ctx, env, args)
	}
	tg, err := mcpTarget(env, command)
	if err != nil {
		return err
	}
	if verb == "proxy" {
		return mcpProxy(ctx, env, tg, args)
	}
	op, ok := mcpVerbs[verb]
	if !ok {
		return usagef("unknown verb %q", verb)
	}
	if len(args) < op.min || len(args) > op.max {
		return usagef("%s wants %s", verb, op.args)
	}
	// A stdio server's stderr (banners, progress) is shown only when the
	// request fails: t/mcp runs this in a stage, and the model sees a
	// stage's stderr, at a cost in tokens, on every call.
	serverErr := &cappedBuf{max: 16 << 10}
	tg.Stderr = serverErr
	err = mcpRequest(ctx, env, tg, op, args)
	if err != nil {
		env.Stderr.Write(serverErr.Bytes())
	}
	return err
}

func mcpRequest(ctx context.Context, env *Env, tg mcpbridge.Target, op mcpVerb, args []string) error {
	c, err := mcpbridge.Dial(ctx, tg)
	if err != nil {
		return err
	}
	defer c.Close()
	return op.run(ctx, env, c, args)
}

// cappedBuf keeps the first max bytes written to it.
type cappedBuf struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (c *cappedBuf) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedBuf) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b
}

// splitCommand cuts a stdio server's command line off the arguments.
func splitCommand(args []string) (before, command []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:]
		}
	}
	return args, nil
}

// serverFiles are the server lists to read: -servers, or the private
// list and then the agents' one.
func serverFiles(env *Env) []string {
	if len(mcpFlags.servers) > 0 {
		return mcpFlags.servers
	}
	dir := env.Config.ConfigDir
	return []string{filepath.Join(dir, "mcp.json"), filepath.Join(dir, "t", "mcp.d", "servers.json")}
}

// mcpTarget is the one server named by -s, -url or a command.
func mcpTarget(env *Env, command []string) (mcpbridge.Target, error) {
	f := &mcpFlags
	n := 0
	for _, set := range []bool{f.server != "", f.url != "", len(command) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return mcpbridge.Target{}, usagef("name one server: -s NAME, -url URL or -- COMMAND")
	}
	var tg mcpbridge.Target
	switch {
	case f.server != "":
		all, err := mcpbridge.LoadServers(serverFiles(env)...)
		if err != nil {
			return tg, err
		}
		s, ok := all[f.server]
		if !ok {
			return tg, fmt.Errorf("no server %q in %s (have: %s)", f.server,
				strings.Join(serverFiles(env), ", "), orNone(strings.Join(all.Names(), " ")))
		}
		tg = s.Target(f.server, os.Getenv)
	case f.url != "":
		tg = mcpbridge.Target{Name: f.url, URL: f.url}
	default:
		tg = mcpbridge.Server{Command: command[0], Args: command[1:]}.Target(filepath.Base(command[0]), os.Getenv)
		// A command of the caller's own gets the caller's environment, as
		// a shell would give it, less what looks like a secret or is a
		// configured key; -e adds to it.
		tg.Env = redact.FromConfig(env.Config).Env(os.Environ(), nil)
		for _, kv := range f.envs {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return tg, usagef("-e %q: want KEY=VALUE", kv)
			}
			tg.Env = append(tg.Env, kv)
		}
	}
	if len(f.envs) > 0 && len(command) == 0 {
		return tg, usagef("-e sets the environment of a -- COMMAND; a configured server takes env in its list")
	}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return tg, usagef("-H %q: want 'Key: value'", h)
		}
		if tg.Headers == nil {
			tg.Headers = map[string]string{}
		}
		tg.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	tg.Stderr = env.Stderr
	return tg, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// An mcpVerb is one request to a server.
type mcpVerb struct {
	args     string
	min, max int
	run      func(ctx context.Context, env *Env, c *mcpbridge.Conn, args []string) error
}

var mcpVerbs = map[string]mcpVerb{
	"tools":     {"no arguments", 0, 0, mcpTools},
	"schema":    {"TOOL", 1, 1, mcpSchema},
	"call":      {"TOOL [JSON]", 1, 2, mcpCall},
	"resources": {"no arguments", 0, 0, mcpResources},
	"read":      {"URI", 1, 1, mcpRead},
	"prompts":   {"no arguments", 0, 0, mcpPrompts},
	"prompt":    {"NAME [JSON]", 1, 2, mcpPrompt},
}

func mcpTools(ctx context.Context, env *Env, c *mcpbridge.Conn, _ []string) error {
	tools, err := c.Tools(ctx)
	if err != nil {
		return err
	}
	idx := mcpbridge.Idx(tools)
	if mcpFlags.idx != "" {
		if err := mcpbridge.WriteIdx(mcpFlags.idx, idx); err != nil {
			return err
		}
	}
	if mcpFlags.text {
		_, err := env.Stdout.Write(idx)
		return err
	}
	return printJSON(env.Stdout, map[string]any{"tools": orEmpty(tools)})
}

func mcpSchema(ctx context.Context, env *Env, c *mcpbridge.Conn, args []string) error {
	tools, err := c.Tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == args[0] {
			return printJSON(env.Stdout, t)
		}
	}
	return fmt.Errorf("no tool %q on this server", args[0])
}

func mcpCall(ctx context.Context, env *Env, c *mcpbridge.Conn, args []string) error {
	in, err := jsonArg(env, args[1:])
	if err != nil {
		return err
	}
	res, err := c.Call(ctx, args[0], in)
	if err != nil {
		return err
	}
	if mcpFlags.text {
		_, err := io.WriteString(env.Stdout, mcpbridge.CallText(res))
		return err
	}
	return printJSON(env.Stdout, res)
}

func mcpResources(ctx context.Context, env *Env, c *mcpbridge.Conn, _ []string) error {
	rs, ts, err := c.Resources(ctx)
	if err != nil {
		return err
	}
	if mcpFlags.text {
		_, err := io.WriteString(env.Stdout, mcpbridge.ResourcesText(rs, ts))
		return err
	}
	return printJSON(env.Stdout, map[string]any{"resources": orEmpty(rs), "resourceTemplates": orEmpty(ts)})
}

func mcpRead(ctx context.Context, env *Env, c *mcpbridge.Conn, args []string) error {
	r, err := c.Read(ctx, args[0])
	if err != nil {
		return err
	}
	if mcpFlags.text {
		_, err := io.WriteString(env.Stdout, mcpbridge.ReadText(r))
		return err
	}
	return printJSON(env.Stdout, r)
}

func mcpPrompts(ctx context.Context, env *Env, c *mcpbridge.Conn, _ []string) error {
	ps, err := c.Prompts(ctx)
	if err != nil {
		return err
	}
	if mcpFlags.text {
		_, err := io.WriteString(env.Stdout, mcpbridge.PromptsText(ps))
		return err
	}
	return printJSON(env.Stdout, map[string]any{"prompts": orEmpty(ps)})
}

func mcpPrompt(ctx context.Context, env *Env, c *mcpbridge.Conn, args []string) error {
	in, err := jsonArg(env, args[1:])
	if err != nil {
		return err
	}
	var pa map[string]string
	if len(in) > 0 {
		if err := json.Unmarshal(in, &pa); err != nil {
			return usagef("prompt arguments: want a JSON object of strings: %v", err)
		}
	}
	r, err := c.Prompt(ctx, args[0], pa)
	if err != nil {
		return err
	}
	if mcpFlags.text {
		_, err := io.WriteString(env.Stdout, mcpbridge.PromptText(r))
		return err
	}
	return printJSON(env.Stdout, r)
}

// jsonArg is the arguments object: the argument if given, else standard
// input unless it is a terminal.
func jsonArg(env *Env, args []string) ([]byte, error) {
	if len(args) > 0 {
		return []byte(args[0]), nil
	}
	if f, ok := env.Stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	return io.ReadAll(env.Stdin)
}

// mcpServers lists the configured servers without the values of their
// env and headers, which may be keys.
func mcpServers(env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("servers takes no arguments")
	}
	all, err := mcpbridge.LoadServers(serverFiles(env)...)
	if err != nil {
		return err
	}
	if mcpFlags.text {
		_, err := io.WriteString(env.Stdout, mcpbridge.ServersText(all))
		return err
	}
	return printJSON(env.Stdout, map[string]any{"mcpServers": all.Redacted()})
}

// orEmpty makes a list that is nil print as [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
