package main

import (
	"fmt"
	"runtime"
	"time"

	"ollie.dev/ollie/internal/perf"
)

func init() {
	registerBench(&benchSection{
		name: "session",
		doc:  "sessions: creation, a full turn (runtime and tool), idle memory, concurrent turns, restart",
		run:  benchSession,
	})
}

func runtimeCPUs() int { return runtime.NumCPU() }

// benchSession runs the real daemon and agent loop against the scripted
// model in instant mode: the model costs next to nothing, so what is left
// is ollie.
func benchSession(b *benchEnv) ([]benchRow, error) {
	e, err := perf.NewEnv(perf.Options{Helper: b.exe, Env: b.exeEnv})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	var rows []benchRow
	st, _, err := e.NewSessions(min(b.n, 2000))
	if err != nil {
		return nil, err
	}
	rows = append(rows, benchRow{key: "session.new", op: "create a session (s/new)", stats: st})
	tr, err := e.Turns(execRuns(b.n))
	if err != nil {
		return nil, err
	}
	verdict := "met"
	if tr.Overhead.Mean > time.Millisecond {
		verdict = "MISSED"
	}
	rows = append(rows,
		benchRow{key: "turn.total", op: "turn: prompt, execute_code echo hi, answer, idle", stats: tr.Total},
		benchRow{key: "turn.tool", op: "  of which the tool process (sandboxed)", stats: tr.Tool},
		benchRow{key: "turn.runtime", op: "  of which the runtime", value: fmt.Sprintf("%9s %9s %9s  goal <= 1000us: %s",
			us(tr.Overhead.Mean), us(tr.Overhead.P50), us(tr.Overhead.P99), verdict)})
	// A run of fewer than 100 per operation is a smoke test (TestBench):
	// it keeps the shapes and shrinks the large counts.
	big, crowd := 10000, 1000
	if b.n < 100 {
		big, crowd = 300, 30
	}
	for _, n := range []int{100, big} {
		per, err := e.IdleMemory(n)
		if err != nil {
			return nil, err
		}
		v := "met"
		if per > 50<<10 {
			v = "MISSED"
		}
		rows = append(rows, benchRow{key: fmt.Sprintf("mem.%d", n), op: fmt.Sprintf("memory per idle session, %d more", n),
			value: fmt.Sprintf("%9.1fKB  goal <= 50KB: %s", float64(per)/1024, v)})
	}
	for _, c := range []struct{ sessions, turns int }{{20, 5}, {crowd, 1}} {
		wall, lat, err := e.Concurrent(c.sessions, c.turns)
		if err != nil {
			return nil, err
		}
		rows = append(rows, benchRow{key: fmt.Sprintf("conc.%dx%d", c.sessions, c.turns),
			op:    fmt.Sprintf("%d sessions x %d turns at once (wall %s)", c.sessions, c.turns, wall.Round(time.Millisecond)),
			stats: lat})
	}
	el, err := e.Restart(0)
	if err != nil {
		return nil, err
	}
	rows = append(rows, benchRow{key: "restart", op: fmt.Sprintf("restart with %d sessions on disk", e.Daemon.Sessions.Len()),
		value: fmt.Sprintf("%9s", us(el))})
	return rows, nil
}
