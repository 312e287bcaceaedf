package execute

import (
	"context"
	"io"
	"sync"
	"time"

	"ollie.dev/ollie/internal/sandbox"
)

// run is one call in progress.
type run struct {
	e       *Executor
	spec    Spec
	prep    *sandbox.Prepared
	env     []string
	overall time.Duration
}

// pipeline runs the stages in order, each reading what the previous one
// wrote, and stops at the first that fails.
func (r *run) pipeline(ctx context.Context, jobs []*job) *Result {
	var in *spool
	var notes []Note
	defer func() { in.Close() }()
	for _, j := range jobs {
		o := r.runStage(ctx, j, in)
		in.Close()
		in = o.stdout
		if o.failed() {
			res := r.result(o)
			res.Notes = append(notes, o.notes...)
			return res
		}
		notes = append(notes, o.stderrNotes()...)
	}
	res := r.result(&outcome{stdout: in})
	res.Notes = notes
	return res
}

func (r *run) runStage(ctx context.Context, j *job, in *spool) *outcome {
	if j.branches == nil {
		return r.runLeaf(ctx, j, in)
	}
	return r.runParallel(ctx, j, in)
}

// runParallel runs the branches of j at once, each with the same input,
// and joins their outputs in submission order. Every branch runs to its
// end; the first failing one in order speaks for the stage.
func (r *run) runParallel(ctx context.Context, j *job, in *spool) *outcome {
	outs := make([]*outcome, len(j.branches))
	var wg sync.WaitGroup
	for i, b := range j.branches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = r.runStage(ctx, b, in)
		}()
	}
	wg.Wait()
	joined := &outcome{job: j, stdout: newSpool(r.spec.Tmp, r.e.maxStageOutput())}
	var failed *outcome
	for _, o := range outs {
		if o.failed() && failed == nil {
			failed = o
		} else {
			joined.notes = append(joined.notes, o.stderrNotes()...)
		}
		if _, err := io.Copy(joined.stdout, o.stdout.Reader()); err == errTooLarge && failed == nil {
			joined.tooLarge, joined.exit = true, -1
			failed = joined
		}
	}
	for _, o := range outs {
		if o != failed {
			o.stdout.Close()
		}
	}
	if failed != nil && failed != joined {
		joined.stdout.Close()
		failed.notes = append(joined.notes, failed.notes...)
		return failed
	}
	return joined
}

// elevate asks for leave to run j outside the sandbox and returns why it
// was refused, or "" if it was granted.
func (r *run) elevate(ctx context.Context, j *job) string {
	for _, p := range r.e.preapproved {
		if sameCommand(p, j.stage) {
			return ""
		}
	}
	if r.spec.Consent == nil {
		return "elevation denied: no one is asked for consent in this session"
	}
	req := Request{
		Session: r.spec.Session, Stage: j.id, Cwd: r.spec.Cwd, Policy: r.spec.Policy,
		Language: j.stage.Language, Code: j.stage.Code, Tool: j.stage.Tool, Args: j.stage.Args,
	}
	d, err := r.spec.Consent.Ask(ctx, req)
	switch {
	case err != nil:
		return "elevation denied: " + err.Error()
	case d != Allow:
		return "elevation denied"
	}
	return ""
}
