package perf

import (
	"context"
	"fmt"
	"io"
	"log"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/session"
)

// timedExec adds up the time spent in execute_code: the tool process with
// its sandbox helper, which the runtime overhead of a turn excludes.
type timedExec struct {
	*execute.Executor
	ns atomic.Int64
}

func (t *timedExec) Run(ctx context.Context, spec execute.Spec, args []byte) (*execute.Result, error) {
	start := time.Now()
	res, err := t.Executor.Run(ctx, spec, args)
	t.ns.Add(int64(time.Since(start)))
	return res, err
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// NewSessions creates n sessions through s/new and times each creation.
func (e *Env) NewSessions(n int) (Stats, []string, error) {
	var ds []time.Duration
	var ids []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("p%d-%d", time.Now().UnixNano(), i)
		start := time.Now()
		if err := write(e.Fsys, "s/new", "cwd="+e.Cwd+" name="+name); err != nil {
			return Stats{}, nil, err
		}
		ds = append(ds, time.Since(start))
		ids = append(ids, name)
	}
	return summarize(ds), ids, nil
}

// Turn is one prompt answered: echo q > prompt; cat wait; cat reply.
func (e *Env) Turn(s string) (time.Duration, error) {
	start := time.Now()
	if err := write(e.Fsys, "s/"+s+"/prompt", "go\n"); err != nil {
		return 0, err
	}
	w, err := read(e.Fsys, "s/"+s+"/wait")
	if err != nil {
		return 0, err
	}
	if w != "idle\n" {
		return 0, fmt.Errorf("turn ended %q", trim(w))
	}
	if _, err := read(e.Fsys, "s/"+s+"/reply"); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// TurnResult splits full turns into the tool process and the rest.
type TurnResult struct {
	Total, Tool, Overhead Stats
}

// Turns runs n full turns (prompt, one execute_code `echo hi`, answer,
// idle), each the second turn of its own session: the first, untimed,
// creates the session's files, and no history grows long.
func (e *Env) Turns(n int) (TurnResult, error) {
	_, ids, err := e.NewSessions(n)
	if err != nil {
		return TurnResult{}, err
	}
	for _, id := range ids {
		if _, err := e.Turn(id); err != nil {
			return TurnResult{}, err
		}
	}
	var tot, tool, over []time.Duration
	for i := 0; i < n; i++ {
		before := e.Exec.ns.Load()
		d, err := e.Turn(ids[i])
		if err != nil {
			return TurnResult{}, err
		}
		td := time.Duration(e.Exec.ns.Load() - before)
		tot, tool, over = append(tot, d), append(tool, td), append(over, d-td)
	}
	return TurnResult{summarize(tot), summarize(tool), summarize(over)}, nil
}

// IdleMemory creates n sessions and returns the heap growth per session
// (this process hosts the daemon).
func (e *Env) IdleMemory(n int) (int64, error) {
	before := heap()
	if _, _, err := e.NewSessions(n); err != nil {
		return 0, err
	}
	after := heap()
	return (after - before) / int64(n), nil
}

func heap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Concurrent runs sessions × turns: each session does its turns one after
// another, all sessions at once. It returns the wall time and the
// latency of every turn.
func (e *Env) Concurrent(sessions, turns int) (time.Duration, Stats, error) {
	_, ids, err := e.NewSessions(sessions)
	if err != nil {
		return 0, Stats{}, err
	}
	var mu sync.Mutex
	var lat []time.Duration
	var first error
	var wg sync.WaitGroup
	start := time.Now()
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < turns; i++ {
				d, err := e.Turn(id)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Since(start), summarize(lat), first
}

// Restart creates n sessions, stops the daemon and times a new start
// until it answers with all n sessions listed.
func (e *Env) Restart(n int) (time.Duration, error) {
	if _, _, err := e.NewSessions(n); err != nil {
		return 0, err
	}
	want := e.Daemon.Sessions.Len()
	e.Fsys.Close()
	e.Fsys = nil
	e.Daemon.Close()
	start := time.Now()
	d, err := daemon.Start(e.Config, daemon.Options{Runner: noRunner{}, Log: quietLog()})
	if err != nil {
		return 0, err
	}
	el := time.Since(start)
	e.Daemon = d
	if got := d.Sessions.Len(); got != want {
		return el, fmt.Errorf("%d sessions after restart, want %d", got, want)
	}
	return el, nil
}

type noRunner struct{}

func (noRunner) Run(context.Context, *session.Turn) error     { return nil }
func (noRunner) Compact(context.Context, *session.Turn) error { return nil }
