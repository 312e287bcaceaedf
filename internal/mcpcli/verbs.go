package mcpcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/mcpbridge"
	"ollie.dev/ollie/internal/mcpconf"
	"ollie.dev/ollie/internal/redact"
)

// run does what the arguments left after the flags say.
func (c *cli) run(ctx context.Context, args []string) error {
	args, command := splitCommand(args)
	if len(args) == 0 {
		return usagef("no verb")
	}
	verb, args := args[0], args[1:]
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	switch verb {
	case "servers":
		return c.listServers(args)
	case "serve":
		return c.serve(ctx, args)
	}
	tg, err := c.target(command)
	if err != nil {
		return err
	}
	if verb == "proxy" {
		return c.proxy(ctx, tg, args)
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
	err = c.request(ctx, tg, op, args)
	if err != nil {
		c.stderr.Write(serverErr.Bytes())
	}
	return err
}

func (c *cli) request(ctx context.Context, tg mcpbridge.Target, op mcpVerb, args []string) error {
	sc, err := mcpbridge.Dial(ctx, tg)
	if err != nil {
		return err
	}
	defer sc.Close()
	return op.run(ctx, c, sc, args)
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
func (c *cli) serverFiles() []string {
	if len(c.Servers) > 0 {
		return c.Servers
	}
	dir := c.cfg.ConfigDir
	return []string{filepath.Join(dir, "mcp.json"), filepath.Join(dir, "t", "mcp.d", "servers.json")}
}

// target is the one server named by -s, -url or a command.
func (c *cli) target(command []string) (mcpbridge.Target, error) {
	n := 0
	for _, set := range []bool{c.Server != "", c.URL != "", len(command) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return mcpbridge.Target{}, usagef("name one server: -s NAME, -url URL or -- COMMAND")
	}
	var tg mcpbridge.Target
	switch {
	case c.Server != "":
		all, err := mcpconf.LoadServers(c.serverFiles()...)
		if err != nil {
			return tg, err
		}
		s, ok := all[c.Server]
		if !ok {
			return tg, fmt.Errorf("no server %q in %s (have: %s)", c.Server,
				strings.Join(c.serverFiles(), ", "), orNone(strings.Join(all.Names(), " ")))
		}
		tg = s.Target(c.Server, os.Getenv)
	case c.URL != "":
		tg = mcpbridge.Target{Name: c.URL, URL: c.URL}
	default:
		tg = mcpconf.Server{Command: command[0], Args: command[1:]}.Target(filepath.Base(command[0]), os.Getenv)
		// A command of the caller's own gets the caller's environment, as
		// a shell would give it, less what looks like a secret or is a
		// configured key; -e adds to it.
		tg.Env = redact.FromConfig(c.cfg).Env(os.Environ(), nil)
		for _, kv := range c.Envs {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return tg, usagef("-e %q: want KEY=VALUE", kv)
			}
			tg.Env = append(tg.Env, kv)
		}
	}
	if len(c.Envs) > 0 && len(command) == 0 {
		return tg, usagef("-e sets the environment of a -- COMMAND; a configured server takes env in its list")
	}
	for _, h := range c.Headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return tg, usagef("-H %q: want 'Key: value'", h)
		}
		if tg.Headers == nil {
			tg.Headers = map[string]string{}
		}
		tg.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	tg.Stderr = c.stderr
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
	run      func(ctx context.Context, c *cli, sc *mcpbridge.Conn, args []string) error
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

func mcpTools(ctx context.Context, c *cli, sc *mcpbridge.Conn, _ []string) error {
	tools, err := sc.Tools(ctx)
	if err != nil {
		return err
	}
	idx := mcpbridge.Idx(tools)
	if c.Idx != "" {
		if err := mcpconf.WriteIdx(c.Idx, idx); err != nil {
			return err
		}
	}
	return c.output(func() string { return string(idx) }, map[string]any{"tools": orEmpty(tools)})
}

func mcpSchema(ctx context.Context, c *cli, sc *mcpbridge.Conn, args []string) error {
	tools, err := sc.Tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == args[0] {
			return printJSON(c.stdout, t)
		}
	}
	return fmt.Errorf("no tool %q on this server", args[0])
}

func mcpCall(ctx context.Context, c *cli, sc *mcpbridge.Conn, args []string) error {
	in, err := c.jsonArg(args[1:])
	if err != nil {
		return err
	}
	res, err := sc.Call(ctx, args[0], in)
	if err != nil {
		return err
	}
	return c.output(func() string { return mcpbridge.CallText(res) }, res)
}

func mcpResources(ctx context.Context, c *cli, sc *mcpbridge.Conn, _ []string) error {
	rs, ts, err := sc.Resources(ctx)
	if err != nil {
		return err
	}
	return c.output(func() string { return mcpbridge.ResourcesText(rs, ts) }, map[string]any{"resources": orEmpty(rs), "resourceTemplates": orEmpty(ts)})
}

func mcpRead(ctx context.Context, c *cli, sc *mcpbridge.Conn, args []string) error {
	r, err := sc.Read(ctx, args[0])
	if err != nil {
		return err
	}
	return c.output(func() string { return mcpbridge.ReadText(r) }, r)
}

func mcpPrompts(ctx context.Context, c *cli, sc *mcpbridge.Conn, _ []string) error {
	ps, err := sc.Prompts(ctx)
	if err != nil {
		return err
	}
	return c.output(func() string { return mcpbridge.PromptsText(ps) }, map[string]any{"prompts": orEmpty(ps)})
}

func mcpPrompt(ctx context.Context, c *cli, sc *mcpbridge.Conn, args []string) error {
	in, err := c.jsonArg(args[1:])
	if err != nil {
		return err
	}
	var pa map[string]string
	if len(in) > 0 {
		if err := json.Unmarshal(in, &pa); err != nil {
			return usagef("prompt arguments: want a JSON object of strings: %v", err)
		}
	}
	r, err := sc.Prompt(ctx, args[0], pa)
	if err != nil {
		return err
	}
	return c.output(func() string { return mcpbridge.PromptText(r) }, r)
}

// jsonArg is the arguments object: the argument if given, else standard
// input unless it is a terminal.
func (c *cli) jsonArg(args []string) ([]byte, error) {
	if len(args) > 0 {
		return []byte(args[0]), nil
	}
	if f, ok := c.stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	return io.ReadAll(c.stdin)
}

// listServers lists the configured servers without the values of their
// env and headers, which may be keys.
func (c *cli) listServers(args []string) error {
	if len(args) > 0 {
		return usagef("servers takes no arguments")
	}
	all, err := mcpconf.LoadServers(c.serverFiles()...)
	if err != nil {
		return err
	}
	return c.output(func() string { return mcpconf.ServersText(all) }, map[string]any{"mcpServers": all.Redacted()})
}

// orEmpty makes a list that is nil print as [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// output writes a verb's answer: text() with -text, else v as JSON.
func (c *cli) output(text func() string, v any) error {
	if c.Text {
		_, err := io.WriteString(c.stdout, text())
		return err
	}
	return printJSON(c.stdout, v)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
