package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"9fans.net/go/plan9"
)

var lsFlags struct {
	addrFlag
	long bool
}

func init() {
	register(&command{
		name:  "ls",
		args:  "[-l] [-addr ADDR [-token FILE]] [PATH ...]",
		short: "list files of the tree over 9P (no mount needed)",
		long:  `List the directories (or files) at each PATH of the tree; the root if none.`,
		flags: func(fs *flag.FlagSet) {
			lsFlags.declare(fs)
			fs.BoolVar(&lsFlags.long, "l", false, "long listing: mode, size, modification time, name")
		},
		run: runLs,
	})
}

func runLs(ctx context.Context, env *Env, args []string) error {
	fsys, err := lsFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	if len(args) == 0 {
		args = []string{"/"}
	}
	var failed error
	for _, a := range args {
		p := treePath(a)
		st, err := fsys.Stat(ctx, p)
		if err != nil {
			fmt.Fprintf(env.Stderr, "ollie ls: %s: %v\n", a, err)
			failed = exitCode(1)
			continue
		}
		if st.Mode&plan9.DMDIR == 0 {
			printDir(env.Stdout, st, lsFlags.long)
			continue
		}
		ents, err := fsys.ReadDir(ctx, p)
		if err != nil {
			fmt.Fprintf(env.Stderr, "ollie ls: %s: %v\n", a, err)
			failed = exitCode(1)
			continue
		}
		if len(args) > 1 {
			fmt.Fprintf(env.Stdout, "%s:\n", a)
		}
		for _, d := range ents {
			printDir(env.Stdout, d, lsFlags.long)
		}
	}
	return failed
}

func printDir(w io.Writer, d *plan9.Dir, long bool) {
	name := d.Name
	if d.Mode&plan9.DMDIR != 0 {
		name += "/"
	}
	if !long {
		fmt.Fprintln(w, name)
		return
	}
	mt := time.Unix(int64(d.Mtime), 0).Format("Jan _2 15:04")
	fmt.Fprintf(w, "%s %8d %s %s\n", d.Mode, d.Length, mt, name)
}
