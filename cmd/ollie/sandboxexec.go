package main

import (
	"context"
	"os"

	"ollie.dev/ollie/internal/sandbox"
)

// The sandbox helper: execute_code starts every stage as
// `ollie sandbox-exec -- SPEC PATH ARGV...`, which confines itself and
// execs PATH. It never returns on success; on failure it exits with the
// status of sandbox.HelperMain, like env(1): 125, 126 or 127.
func init() {
	register(&command{
		name:     sandbox.HelperCommand,
		args:     "-- SPEC PATH ARGV0 [ARG...]",
		short:    "confine this process and exec a program (internal)",
		noConfig: true,
		hidden:   true,
		run: func(ctx context.Context, env *Env, args []string) error {
			os.Exit(sandbox.HelperMain(args))
			return nil
		},
	})
}

// The helper runs once per stage, so it starts here, before Main sets up
// flags, configuration and signal handling it has no use for.
func init() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperCommand {
		os.Exit(sandbox.HelperMain(os.Args[2:]))
	}
}
