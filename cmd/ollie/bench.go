package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"ollie.dev/ollie/internal/bench"
)

var benchFlags struct {
	n, turns, rounds int
	big, mcp, keep   bool
	only, ref        string
	cpuprofile       string
	daemonprofiles   string
}

func init() {
	register(&command{
		name:  "bench",
		args:  "[-n N] [-turns N] [-rounds N] [-big] [-mcp] [-only GROUP,...] [-ref OLLIESRV] [-keep] [-cpuprofile FILE] [-daemonprofiles DIR]",
		short: "measure the daemon from outside, against floors measured in the same run",
		long: `Bench starts the daemon (this binary's serve), two scripted models
(llmserver, one answering at once, one streaming) and, for the FUSE rows,
a mount (mount), each in a process of its own with a temporary home: your
sessions and files are not touched. It measures them from this process,
a client like any other, over the unix socket (9P) and through the mount,
and prints one Markdown table: each row with the floor it is compared
with (socket round trips to an echo process, fork/exec of /bin/true, a
write+fsync, a cat of a file on disk), measured in the same run, and the
ratio to it. Memory is the PSS and RSS of the daemon and its helper
processes. A default run takes about two minutes; -big (the 10,000
session rows) and -ref add a few more. With -ref, the same client and
models also measure the reference daemon (olliesrv, built outside this
repository). See docs/bench.md.

Groups, for -only: ` + strings.Join(bench.Groups, ", ") + ` (mcp only with -mcp or -only).`,
		flags: func(fs *flag.FlagSet) {
			f := &benchFlags
			fs.IntVar(&f.n, "n", 2000, "run each small operation (9P, FUSE, session creation; at most 1000) `N` times")
			fs.IntVar(&f.turns, "turns", 200, "time `N` turns of each kind")
			fs.IntVar(&f.rounds, "rounds", 5, "start `N` fresh daemons per start-up row, and stream N replies per ingest row")
			fs.BoolVar(&f.big, "big", false, "also 10,000 idle sessions, and a restart with them on disk (minutes)")
			fs.BoolVar(&f.mcp, "mcp", false, "also an MCP tools/call through t/mcp next to a t/ script (needs node and server-everything)")
			fs.StringVar(&f.only, "only", "", "run only the named `GROUPS` (comma-separated)")
			fs.StringVar(&f.ref, "ref", "", "also measure the reference daemon, the `OLLIESRV` binary (docs/bench.md)")
			fs.BoolVar(&f.keep, "keep", false, "keep the run's directory (the log of every process it started) and print where it is")
			fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the bench process (the client) to `FILE`")
			fs.StringVar(&f.daemonprofiles, "daemonprofiles", "", "have each of ollie's daemons write its CPU, heap, blocking and mutex profiles into `DIR` when it stops")
		},
		run:      runBench,
		noConfig: true,
	})
	register(&command{
		name:     "benchecho",
		args:     "SOCKET",
		short:    "serve the echo floor of ollie bench on SOCKET (internal)",
		noConfig: true,
		hidden:   true,
		run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 {
				return usagef("want one socket path")
			}
			go func() { <-ctx.Done(); os.Remove(args[0]); os.Exit(0) }()
			return bench.ServeEcho(args[0])
		},
	})
}

// benchExeEnv is added to the environment of every process the bench
// starts; tests, whose binary is ollie only when told so, set it.
var benchExeEnv []string

func runBench(ctx context.Context, env *Env, args []string) error {
	f := &benchFlags
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if f.n < 1 || f.turns < 1 || f.rounds < 1 {
		return usagef("-n, -turns and -rounds must be at least 1")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o := bench.Options{Exe: exe, Env: benchExeEnv, N: f.n, Turns: f.turns, Rounds: f.rounds, Big: f.big, MCP: f.mcp,
		Ref: f.ref, Log: env.Stderr, Keep: f.keep, DaemonProfiles: f.daemonprofiles}
	if f.only != "" {
		o.Only = strings.Split(f.only, ",")
	}
	if f.daemonprofiles != "" {
		if o.DaemonProfiles, err = filepath.Abs(f.daemonprofiles); err != nil {
			return err
		}
		if err := os.MkdirAll(o.DaemonProfiles, 0700); err != nil {
			return err
		}
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return bench.Run(ctx, o, env.Stdout)
}
