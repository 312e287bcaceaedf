// Command ollie-mcp is ollie's MCP bridge: `ollie mcp` runs it, t/mcp
// calls it from stages, and the daemon starts a session's long-lived
// MCP servers behind it (`ollie-mcp -private proxy`). See docs/mcp.md.
//
// It is a binary of its own, installed next to ollie, because the MCP
// SDK and what it links (a JSON Schema library, encoding/gob, OAuth
// types) initialise registries at load: linked into ollie, every ollie
// process (the daemon, each verb a script or a tool runs) paid about a
// millisecond for them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"ollie.dev/ollie/internal/mcpcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mcpcli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
