package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"ollie.dev/ollie/internal/bench"
)

// File operations are measured from a process of their own, as a user's
// cat is. Done from the process that serves the mount, the measuring
// thread would sit in open(2) holding one of the Go scheduler's Ps while
// the FUSE server that must answer it waits for one: a handicap for a
// server of several goroutines (ours) over one of one (go-fuse's memfs),
// and not what users see.

// A fileOp is one file operation for the helper: "read" (open, read to
// the end, close) or "stat", on a path.
type fileOp struct{ kind, path string }

func (o fileOp) String() string { return o.kind + ":" + o.path }

func init() {
	register(&command{
		name:     "benchfiles",
		args:     "-n N OP:PATH ...",
		short:    "measure file operations for ollie bench (internal)",
		noConfig: true,
		hidden:   true,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&benchFilesN, "n", 1000, "run each operation `N` times")
		},
		run: runBenchFiles,
	})
}

var benchFilesN int

// runBenchFiles measures the operations, interleaved, and prints their
// statistics as one JSON array.
func runBenchFiles(ctx context.Context, env *Env, args []string) error {
	var runs []func() error
	for _, a := range args {
		kind, path, _ := strings.Cut(a, ":")
		switch kind {
		case "read":
			runs = append(runs, bench.OpenReadClose(path))
		case "stat":
			runs = append(runs, bench.Stat(path))
		default:
			return usagef("unknown operation %q", a)
		}
	}
	sts, err := bench.MeasureAll(benchFilesN, runs...)
	if err != nil {
		return err
	}
	return json.NewEncoder(env.Stdout).Encode(sts)
}

// measureFiles runs ops in a helper process and returns their statistics.
func (b *benchEnv) measureFiles(ops []fileOp) ([]bench.Stats, error) {
	args := []string{"benchfiles", "-n", strconv.Itoa(b.n)}
	for _, o := range ops {
		args = append(args, o.String())
	}
	cmd := exec.CommandContext(b.ctx, b.exe, args...)
	cmd.Env = append(os.Environ(), b.exeEnv...)
	cmd.Stderr = b.stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s benchfiles: %w", b.exe, err)
	}
	var sts []bench.Stats
	if err := json.Unmarshal(out, &sts); err != nil || len(sts) != len(ops) {
		return nil, fmt.Errorf("benchfiles said %q: %v", out, err)
	}
	return sts, nil
}
