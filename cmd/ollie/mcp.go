package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

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
// ollie-web: the process, its pid and its standard files stay the same.
func runMCP(ctx context.Context, env *Env, args []string) error {
	exe := filepath.Join(filepath.Dir(env.Argv0), mcpconf.Program)
	if _, err := os.Stat(exe); err != nil {
		return fmt.Errorf("%s is not installed beside %s: build it, with ./run.sh or go build -o %s ./cmd/%s",
			mcpconf.Program, env.Argv0, filepath.Dir(env.Argv0), mcpconf.Program)
	}
	argv := []string{mcpconf.Program}
	if env.Config.File != "" {
		argv = append(argv, "-config", env.Config.File)
	}
	return syscall.Exec(exe, append(argv, args...), os.Environ())
}
