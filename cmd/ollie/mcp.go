package main

import (
	"context"
	"flag"

	"ollie.dev/ollie/internal/mcpconf"
)

func init() {
	register(&command{
		name:  "mcp",
		args:  mcpconf.Synopsis,
		short: mcpconf.Short,
		long:  mcpconf.Long,
		// Declared for 'ollie help mcp' only: ollie-mcp parses them.
		flags: func(fs *flag.FlagSet) { new(mcpconf.Flags).Declare(fs) },
		raw:   true,
		run:   runMCP,
	})
}

// runMCP becomes ollie-mcp with the same arguments, as runWeb becomes
// ollie-web.
func runMCP(ctx context.Context, env *Env, args []string) error {
	return become(env, mcpconf.Program, args)
}
