package main

import (
	"context"
	"flag"
	"fmt"
	"time"
)

var statFlags struct{ addrFlag }

func init() {
	register(&command{
		name:  "stat",
		args:  "[-addr ADDR [-token FILE]] PATH ...",
		short: "show the 9P metadata of files of the tree",
		long:  `Print name, qid (path.version.type), mode, length, modification time and owner of each PATH.`,
		flags: func(fs *flag.FlagSet) { statFlags.declare(fs) },
		run:   runStat,
	})
}

func runStat(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("no file named")
	}
	fsys, err := statFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	var failed error
	for _, a := range args {
		d, err := fsys.Stat(ctx, treePath(a))
		if err != nil {
			fmt.Fprintf(env.Stderr, "ollie stat: %s: %v\n", a, err)
			failed = exitCode(1)
			continue
		}
		fmt.Fprintf(env.Stdout, "name %s\nqid %v\nmode %v\nlength %d\nmtime %s\nuid %s\n",
			d.Name, d.Qid, d.Mode, d.Length, time.Unix(int64(d.Mtime), 0).Format(time.RFC3339), d.Uid)
		if len(args) > 1 {
			fmt.Fprintln(env.Stdout)
		}
	}
	return failed
}
