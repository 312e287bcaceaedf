package main

import (
	"context"
	"flag"
	"fmt"
	"path"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/ninep/client"
)

var rmFlags struct {
	addrFlag
	recursive bool
}

func init() {
	register(&command{
		name:  "rm",
		args:  "[-r] [-addr ADDR [-token FILE]] PATH ...",
		short: "remove files of the tree over 9P",
		long:  `Remove each PATH. With -r, remove directories and what they hold.`,
		flags: func(fs *flag.FlagSet) {
			rmFlags.declare(fs)
			fs.BoolVar(&rmFlags.recursive, "r", false, "remove directories recursively")
		},
		run: runRm,
	})
}

func runRm(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("no file named")
	}
	fsys, err := rmFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	var failed error
	for _, a := range args {
		if err := remove(ctx, fsys, treePath(a), rmFlags.recursive); err != nil {
			fmt.Fprintf(env.Stderr, "ollie rm: %s: %v\n", a, err)
			failed = exitCode(1)
		}
	}
	return failed
}

func remove(ctx context.Context, fsys *client.Fsys, p string, recursive bool) error {
	if p == "" {
		return &cliError{"will not remove the root"}
	}
	err := fsys.Remove(ctx, p)
	if err == nil || !recursive {
		return err
	}
	st, serr := fsys.Stat(ctx, p)
	if serr != nil || st.Mode&plan9.DMDIR == 0 {
		return err
	}
	ents, rerr := fsys.ReadDir(ctx, p)
	if rerr != nil {
		return rerr
	}
	for _, d := range ents {
		if err := remove(ctx, fsys, path.Join(p, d.Name), true); err != nil {
			return err
		}
	}
	return fsys.Remove(ctx, p)
}
