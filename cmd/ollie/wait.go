package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"ollie.dev/ollie/internal/errs"
)

var waitFlags struct{ addrFlag }

func init() {
	register(&command{
		name:  "wait",
		args:  "[-addr ADDR] SESSION ...",
		short: "wait until sessions are idle, over 9P",
		long: `Block until each session (an id, a name, or a path such as s/NAME) is idle
with an empty queue, as a read of its wait file does, and print its final state
and, if its last turn failed, the error. The exit status is 0 if every session
ended idle, 1 otherwise, 130 on Ctrl-C. Useful where the tree is not mounted.`,
		flags: func(fs *flag.FlagSet) { waitFlags.declare(fs) },
		run:   runWait,
	})
}

func runWait(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("no session named")
	}
	fsys, err := waitFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	failed := false
	for _, a := range args {
		p := treePath(a)
		if !strings.Contains(p, "/") {
			p = "s/" + p
		}
		b, err := fsys.ReadFile(ctx, p+"/wait")
		if err != nil {
			if ctx.Err() != nil {
				return errs.E(errs.Interrupted)
			}
			return fmt.Errorf("%s: %v", a, err)
		}
		out := string(b)
		if len(args) > 1 {
			out = a + ": " + out
		}
		fmt.Fprint(env.Stdout, out)
		if !strings.HasPrefix(string(b), "idle") {
			failed = true
		}
	}
	if failed {
		return exitCode(1)
	}
	return nil
}
