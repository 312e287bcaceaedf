package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"

	"ollie.dev/ollie/internal/shell"
)

var shFlags struct {
	mount, session, model, backend string
	new                            bool
}

func init() {
	register(&command{
		name:  "sh",
		args:  "[-mount DIR] [-new | -s SESSION] [-model M] [-backend B]",
		short: "an interactive shell over the mounted tree",
		long: `Sh is a line-editing shell over a session of the mounted tree (plain
file I/O on the mount, as any client). It resumes the newest session
working in the current directory, or starts one (-new: always a new one;
-s: that session). A line is a prompt: the answer streams as it arrives,
tool calls shown one line each, then the state and usage. Ctrl-C stops a
running turn (ctl stop); twice at an empty prompt, or Ctrl-D, leaves.

  /help /stop /resume /compact /clear /model [M] /backend [B] /usage /cost
  /new /sessions /switch SESSION /q TEXT (queue, fifo.in) /exit
  !COMMAND  runs COMMAND in the session's directory with its env file's
            variables, except secret ones, whose values the tree never shows

The tree is -mount DIR, else $OLLIE, else the configured mount point;
the script s/sh in the tree runs this on the tree it lives in. History is
kept in $XDG_STATE_HOME/ollie/sh_history.`,
		flags: func(fs *flag.FlagSet) {
			f := &shFlags
			fs.StringVar(&f.mount, "mount", "", "the tree is mounted at `DIR` (default $OLLIE, else the configured mount point)")
			fs.BoolVar(&f.new, "new", false, "start a new session even if one works in this directory")
			fs.StringVar(&f.session, "s", "", "use `SESSION` (an id, a name, a path)")
			fs.StringVar(&f.model, "model", "", "the `MODEL` of a new session")
			fs.StringVar(&f.backend, "backend", "", "the `BACKEND` of a new session")
		},
		interactive: true,
		run:         runSh,
	})
}

func runSh(ctx context.Context, env *Env, args []string) error {
	f := &shFlags
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if f.new && f.session != "" {
		return usagef("-new and -s exclude each other")
	}
	mnt := f.mount
	if mnt == "" {
		mnt = os.Getenv("OLLIE")
	}
	if mnt == "" {
		mnt = env.Config.Mount
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	return shell.Run(ctx, shell.Options{
		Mount: mnt, Cwd: cwd, New: f.new, Session: f.session, Model: f.model, Backend: f.backend,
		History: filepath.Join(env.Config.StateDir, "sh_history"),
		Environ: os.Environ(),
		Stdin:   os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	})
}
