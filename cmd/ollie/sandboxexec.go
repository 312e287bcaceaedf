package main

import (
	"context"
	"os"

	"ollie.dev/ollie/internal/sandbox"
)

// The sandbox helper. `ollie sandbox-exec -serve` is the resident helper
// the daemon keeps, which starts every stage from a confined thread of its
// own; `ollie sandbox-exec -- SPEC PATH ARGV...` confines itself and
// execs PATH, for elevated stages and as a fallback. That one never
// returns on success; on failure it exits with the status of
// sandbox.HelperMain, like env(1): 125, 126 or 127.
func init() {
	register(&command{
		name:     sandbox.HelperCommand,
		args:     "-serve | -- SPEC PATH ARGV0 [ARG...]",
		short:    "confine this process and exec a program (internal)",
		noConfig: true,
		hidden:   true,
		run: func(ctx context.Context, env *Env, args []string) error {
			os.Exit(sandbox.HelperMain(args))
			return nil
		},
	})
}

// The helper starts here, before Main sets up flags, configuration and
// signal handling neither form of it has any use for.
func init() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperCommand {
		if len(os.Args) > 2 && os.Args[2] == "-serve" {
			trimExecutable() // it lives as long as the daemon
		}
		os.Exit(sandbox.HelperMain(os.Args[2:]))
	}
}
