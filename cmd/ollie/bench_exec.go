package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
)

func init() {
	registerBench(&benchSection{
		name: "exec",
		doc:  "execute_code: a sandboxed stage next to a bare fork/exec, 8 parallel stages next to 8 sequential",
		run:  benchExec,
	})
}

// execRuns caps the runs of process-starting benchmarks, each of which
// costs milliseconds.
func execRuns(n int) int { return min(n, 300) }

// benchExec measures what the sandbox adds to a stage: a one-stage call
// and a stage within a pipeline of 8, against a plain fork/exec of the same
// interpreter; and the fan-out of 8 parallel stages against 8 in sequence.
func benchExec(b *benchEnv) ([]benchRow, error) {
	ex, spec, err := benchExecutor(b)
	if err != nil {
		return nil, err
	}
	r, err := ex.Bench(b.ctx, spec, execRuns(b.n))
	if err != nil {
		return nil, err
	}
	verdict := "met"
	if r.Overhead() > time.Millisecond {
		verdict = "MISSED"
	}
	return []benchRow{
		{key: "exec.bare", op: "fork/exec sh -c : (no sandbox)", value: fmt.Sprintf("%9s", us(r.Bare))},
		{key: "exec.stage", op: "execute_code, one stage", value: fmt.Sprintf("%9s  +%s", us(r.Stage), us(r.Stage-r.Bare))},
		{key: "exec.perstage", op: "per stage in a pipeline of 8", value: fmt.Sprintf("%9s  +%s over bare, goal <= +1000us: %s",
			us(r.Sequential8/8), us(r.Overhead()), verdict)},
		{key: "exec.seq8", op: "8 stages in sequence", value: fmt.Sprintf("%9s", us(r.Sequential8))},
		{key: "exec.par8", op: "8 stages in parallel", value: fmt.Sprintf("%9s  %.2fx faster than in sequence (%d CPUs)",
			us(r.Parallel8), float64(r.Sequential8)/float64(r.Parallel8), runtimeCPUs())},
	}, nil
}

// benchExecutor is an executor with the default sandbox, this program as
// its helper, and a session in the bench's scratch directory.
func benchExecutor(b *benchEnv) (*execute.Executor, execute.Spec, error) {
	home := filepath.Join(b.dir, "exec-home")
	cwd, tmp := filepath.Join(b.dir, "exec-cwd"), filepath.Join(b.dir, "exec-tmp")
	// A repository, as most working directories are: its .git is
	// read-only to stages, which costs a mount namespace per stage.
	for _, d := range []string{home, filepath.Join(cwd, ".git"), tmp} {
		if err := os.MkdirAll(d, 0700); err != nil {
			return nil, execute.Spec{}, err
		}
	}
	ex, err := execute.New(execute.Options{Helper: b.exe, Sandbox: config.DefaultSandbox(), Home: home,
		Environ: append(os.Environ(), b.exeEnv...)})
	return ex, execute.Spec{Cwd: cwd, Tmp: tmp}, err
}
