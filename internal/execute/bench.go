package execute

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"ollie.dev/ollie/internal/errs"
)

// BenchResult is what Bench measured: the mean time of each operation.
type BenchResult struct {
	Runs int
	// Bare is a plain fork/exec of the interpreter (sh -c :), no helper.
	Bare time.Duration
	// Stage is a whole call of one stage running the same code in the
	// sandbox: argument parsing, policy, ruleset, helper, exec, wait.
	Stage time.Duration
	// Sequential8 is a call of 8 such stages in a pipeline; Parallel8 a
	// call of one parallel stage of 8 branches.
	Sequential8 time.Duration
	Parallel8   time.Duration
}

// Overhead is what the sandbox adds to each stage: the mean time of a
// stage within a pipeline, less the bare fork/exec.
func (b BenchResult) Overhead() time.Duration { return b.Sequential8/8 - b.Bare }

func (b BenchResult) String() string {
	return fmt.Sprintf("runs %d\nbare fork/exec %v\none-stage call %v (+%v)\nper stage in a pipeline %v (+%v)\n"+
		"8 sequential %v\n8 parallel %v (%.2fx)\n",
		b.Runs, b.Bare, b.Stage, b.Stage-b.Bare, b.Sequential8/8, b.Overhead(),
		b.Sequential8, b.Parallel8, float64(b.Sequential8)/float64(b.Parallel8))
}

// Benchmark workloads: the smallest thing an interpreter can run, so
// that what is measured is starting it.
var (
	benchOne  = `{"steps":[{"language":"sh","code":":"}]}`
	benchSeq8 = `{"steps":[` + strings.TrimSuffix(strings.Repeat(`{"language":"sh","code":":"},`, 8), ",") + `]}`
	benchPar8 = `{"steps":[{"parallel":[` + strings.TrimSuffix(strings.Repeat(`{"language":"sh","code":":"},`, 8), ",") + `]}]}`
)

// Bench measures the cost of the sandbox in spec's session, n runs of
// each operation (`ollie bench` shows it; `go test -bench .` in this
// package measures the same operations).
func (e *Executor) Bench(ctx context.Context, spec Spec, n int) (BenchResult, error) {
	sh, ok := lookPath("sh", e.o.Sandbox.Path)
	if !ok {
		return BenchResult{}, errs.E(errs.NotExist, "bench: no sh in the sandbox PATH")
	}
	r := BenchResult{Runs: n}
	for _, m := range []struct {
		dst *time.Duration
		run func() error
	}{
		{&r.Bare, func() error { return bareExec(sh) }},
		{&r.Stage, func() error { return e.benchCall(ctx, spec, benchOne) }},
		{&r.Sequential8, func() error { return e.benchCall(ctx, spec, benchSeq8) }},
		{&r.Parallel8, func() error { return e.benchCall(ctx, spec, benchPar8) }},
	} {
		if err := m.run(); err != nil { // warm up caches, fail early
			return r, err
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := m.run(); err != nil {
				return r, err
			}
		}
		*m.dst = time.Since(start) / time.Duration(n)
	}
	return r, nil
}

func bareExec(sh string) error { return exec.Command(sh, "-c", ":").Run() }

func (e *Executor) benchCall(ctx context.Context, spec Spec, args string) error {
	res, err := e.Run(ctx, spec, []byte(args))
	if err != nil {
		return err
	}
	if res.Failed {
		return errs.E(errs.Other, "bench: "+res.String())
	}
	return nil
}
