package mcpconf

import (
	"flag"
	"strings"
	"time"

	"ollie.dev/ollie/internal/dial"
)

// Program is the bridge's executable, installed beside ollie: `ollie
// mcp` becomes it, t/mcp runs it, and the daemon starts a session's
// long-lived servers with it.
const Program = "ollie-mcp"

// Flags are the bridge's command line, shared by `ollie mcp` (its help)
// and ollie-mcp (which parses it), so the two cannot drift.
type Flags struct {
	Server  string
	Servers List
	URL     string
	Headers List
	Envs    List
	Text    bool
	Idx     string
	Timeout time.Duration
	Listen  string
	Private bool
	Addr    string
	Token   string
}

// List is a flag that may be repeated.
type List []string

func (l *List) String() string     { return strings.Join(*l, ",") }
func (l *List) Set(v string) error { *l = append(*l, v); return nil }

// Declare declares the flags on fs.
func (f *Flags) Declare(fs *flag.FlagSet) {
	fs.StringVar(&f.Server, "s", "", "the configured server called `NAME`")
	fs.Var(&f.Servers, "servers", "read the server list from `FILE` (repeatable; default mcp.json, t/mcp.d/servers.json)")
	fs.StringVar(&f.URL, "url", "", "a streamable HTTP server at `URL`")
	fs.Var(&f.Headers, "H", "add the HTTP `header` 'Key: value' (repeatable)")
	fs.Var(&f.Envs, "e", "-- COMMAND: set `KEY=VALUE` in its environment (repeatable)")
	fs.BoolVar(&f.Text, "text", false, "print text: idx lines for tools, text content for calls")
	fs.StringVar(&f.Idx, "idx", "", "tools: also write the idx lines to `FILE`")
	fs.DurationVar(&f.Timeout, "timeout", 0, "give up after `D` (default: never)")
	fs.StringVar(&f.Listen, "listen", "127.0.0.1:7801", "proxy: serve on `ADDR`")
	fs.BoolVar(&f.Private, "private", false, "proxy: serve under a random path only, and print the URL on stdout")
	fs.StringVar(&f.Addr, "addr", "", dial.AddrUsage)
	fs.StringVar(&f.Token, "token", "", dial.TokenUsage)
}

// Synopsis, Short and Long are the bridge's help: `ollie help mcp`
// and `ollie mcp -h` print them.
const (
	Synopsis = "[-s NAME | -url URL] [-text] [flags] VERB [ARG...] [-- COMMAND [ARG...]]"
	Short    = "use an MCP server from the command line, or serve ollie over MCP"
	Long     = `Talk to one MCP server: a configured one (-s NAME), a command to start
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
A failing call prints the server's message and exits 1.

It is the program ollie-mcp, installed beside ollie (./run.sh builds it),
so that only the bridge links the MCP SDK. See docs/mcp.md.`
)
