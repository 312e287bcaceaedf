// Package perf measures the session layer for `ollie bench`: session
// creation, a full turn split into runtime overhead and the tool process,
// memory per idle session, concurrent turns, and a restart with many
// sessions on disk. Everything runs the real daemon, real 9P over the
// unix socket, the real agent loop, the real sandbox, and the scripted
// LLM server over real HTTP in instant mode.
package perf

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"ollie.dev/ollie/internal/agent"
	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/ninep/client"
)

// Env is a daemon with an agent runner talking to an instant scripted
// model, in a temporary home.
type Env struct {
	Root   string
	Config *config.Config
	Daemon *daemon.Daemon
	LLM    *llmtest.Server
	Exec   *timedExec
	Fsys   *client.Fsys
	Cwd    string
}

// Options of an Env.
type Options struct {
	Helper string   // the ollie executable (sandbox helper)
	Env    []string // added to the environment the helper sees
	Script *llmtest.Script
}

// NewEnv starts everything. Close removes it all.
func NewEnv(o Options) (*Env, error) {
	root, err := os.MkdirTemp("", "ollie-perf-")
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, Cwd: filepath.Join(root, "cwd")}
	if err := e.start(o); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Env) start(o Options) error {
	os.MkdirAll(e.Cwd, 0700)
	sc := o.Script
	if sc == nil {
		sc = TurnScript()
	}
	llm, err := llmtest.Start("127.0.0.1:0", sc)
	if err != nil {
		return err
	}
	e.LLM = llm
	vars := map[string]string{"HOME": filepath.Join(e.Root, "home"), "XDG_RUNTIME_DIR": filepath.Join(e.Root, "run"), "OLLAMA_HOST": llm.URL}
	cfg, err := config.Load(config.Env{Get: func(k string) string { return vars[k] }, UID: os.Getuid()}, "")
	if err != nil {
		return err
	}
	e.Config = cfg
	r, err := e.runner(o.Helper, o.Env)
	if err != nil {
		return err
	}
	if e.Daemon, err = daemon.Start(cfg, daemon.Options{Runner: r, Log: quietLog()}); err != nil {
		return err
	}
	e.Fsys, err = client.Mount(context.Background(), cfg.Socket, "bench", "")
	return err
}

func (e *Env) runner(helper string, env []string) (*agent.Runner, error) {
	cfg := e.Config
	var bes []backend.Backend
	for _, bc := range cfg.Backends {
		be, err := backend.New(bc, cfg.Secrets[bc.Name], nil)
		if err != nil {
			return nil, err
		}
		bes = append(bes, be)
	}
	ex, err := execute.New(execute.Options{Helper: helper, Sandbox: cfg.Sandbox, Home: cfg.ConfigDir,
		Private: execute.PrivatePaths(cfg), Environ: append(os.Environ(), env...)})
	if err != nil {
		return nil, err
	}
	e.Exec = &timedExec{Executor: ex}
	return agent.New(agent.Options{Config: cfg, Backends: bes, Exec: e.Exec}), nil
}

// Close stops the daemon and the model and removes the home.
func (e *Env) Close() {
	if e.Fsys != nil {
		e.Fsys.Close()
	}
	if e.Daemon != nil {
		e.Daemon.Close()
	}
	if e.LLM != nil {
		e.LLM.Close()
	}
	os.RemoveAll(e.Root)
}

// TurnScript: the model calls execute_code `echo hi`, then answers.
func TurnScript() *llmtest.Script {
	return &llmtest.Script{Instant: true, NoRecord: true, Loop: true, Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{llmtest.ExecuteCode("sh", "echo hi")}},
		{Text: "done"},
	}}
}

// Stats are the statistics of a set of durations.
type Stats = bench.Stats

func summarize(d []time.Duration) Stats {
	if len(d) == 0 {
		return Stats{}
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	return Stats{N: len(s), Mean: sum / time.Duration(len(s)), P50: s[len(s)/2], P99: s[len(s)*99/100], Max: s[len(s)-1]}
}

func write(f *client.Fsys, p, data string) error {
	return f.WriteFile(context.Background(), p, []byte(data), 0)
}

func read(f *client.Fsys, p string) (string, error) {
	b, err := f.ReadFile(context.Background(), p)
	return string(b), err
}

func trim(s string) string { return strings.TrimSpace(s) }
