package main

import (
	"context"
	"os"

	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/trim"
)

// The sandbox helper, when there is no ollie-sandbox beside ollie
// (sandbox.HelperFor): ollie is then its own. `ollie sandbox-exec
// -build=B -serve` is the resident helper the daemon keeps, which starts
// every stage from a confined thread of its own; `ollie sandbox-exec
// -build=B -- SPEC PATH ARGV...` confines itself and execs PATH, for
// elevated stages and as a fallback. That one never returns on success;
// on failure it exits with the status of sandbox.HelperMain, like env(1):
// 125, 126 or 127.
func init() {
	register(&command{
		name:     sandbox.HelperCommand,
		args:     "-build=B (-serve | -- SPEC PATH ARGV0 [ARG...])",
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
		if sandbox.Resident(os.Args[2:]) {
			trim.Executable() // it lives as long as the daemon
			go trim.WhenIdle(context.Background(), sandbox.Served)
		}
		os.Exit(sandbox.HelperMain(os.Args[2:]))
	}
}
