package execute

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/errs"
)

// In-process benchmarks of the executor: the stages are real processes
// in the real sandbox, started by this test process rather than by a
// daemon (`ollie bench` measures a stage as the daemon runs it, row
// turn.stage). Run with: go test -run '^$' -bench . ./internal/execute/
// BenchmarkBareExec is the baseline the others are compared with.

// Benchmark workloads: the smallest thing an interpreter can run, so
// that what is measured is starting it.
var (
	benchOne  = `{"steps":[{"language":"sh","code":":"}]}`
	benchSeq8 = `{"steps":[` + strings.TrimSuffix(strings.Repeat(`{"language":"sh","code":":"},`, 8), ",") + `]}`
	benchPar8 = `{"steps":[{"parallel":[` + strings.TrimSuffix(strings.Repeat(`{"language":"sh","code":":"},`, 8), ",") + `]}]}`
)

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

func benchFixture(b *testing.B) (*fixture, *Executor) {
	f := newFixture(b)
	return f, f.executor()
}

func BenchmarkBareExec(b *testing.B) {
	sh, _ := lookPath("sh", "/usr/bin:/bin")
	for b.Loop() {
		if err := bareExec(sh); err != nil {
			b.Fatal(err)
		}
	}
}

func benchArgs(b *testing.B, args string, oneShot bool) { benchIn(b, args, oneShot, false) }

// benchIn runs args; with git the working directory has a .git, which
// every stage gets read-only in a mount namespace of its own.
func benchIn(b *testing.B, args string, oneShot, git bool) {
	f := newFixture(b)
	if git {
		mkdir(b, filepath.Join(f.cwd, ".git", "hooks"))
	}
	ex := f.executor()
	ex.o.OneShot = ex.o.OneShot || oneShot
	spec := f.spec()
	for b.Loop() {
		if err := ex.benchCall(b.Context(), spec, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStage is one call of one sandboxed stage; the OneShot
// variants start each stage through a helper process of its own, the
// way stages started before the resident helper.
func BenchmarkStage(b *testing.B)        { benchArgs(b, benchOne, false) }
func BenchmarkStageOneShot(b *testing.B) { benchArgs(b, benchOne, true) }

// BenchmarkStageHelperOnly runs the stage through the helper without any
// confinement (a preapproved elevated stage): the cost of the re-exec
// alone.
func BenchmarkStageHelperOnly(b *testing.B) {
	f, _ := benchFixture(b)
	st := Stage{Language: "sh", Code: ":", Elevated: true}
	raw, _ := json.Marshal(st)
	f.sb.Preapproved = []json.RawMessage{raw}
	ex := f.executor()
	args, _ := json.Marshal(Args{Steps: []Stage{st}})
	spec := f.spec()
	for b.Loop() {
		if err := ex.benchCall(b.Context(), spec, string(args)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSequential8(b *testing.B)        { benchArgs(b, benchSeq8, false) }
func BenchmarkSequential8OneShot(b *testing.B) { benchArgs(b, benchSeq8, true) }
func BenchmarkParallel8(b *testing.B)          { benchArgs(b, benchPar8, false) }
func BenchmarkParallel8OneShot(b *testing.B)   { benchArgs(b, benchPar8, true) }
func BenchmarkSequential8Git(b *testing.B)     { benchIn(b, benchSeq8, false, true) }
func BenchmarkParallel8Git(b *testing.B)       { benchIn(b, benchPar8, false, true) }
