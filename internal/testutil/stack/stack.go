// Package stack starts the whole of ollie for a test: a scripted model
// speaking a backend's wire format over real HTTP, a real daemon in a
// temporary home whose sessions run the real agent loop, execute_code in
// the real sandbox, and, when asked, the tree mounted through real FUSE.
//
// A package whose tests use it is the sandbox helper too: its TestMain is
// testutil.SandboxMain.
//
// It is a package of its own, not part of testutil, because it imports
// the agent, whose tests use testutil.
package stack

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ollie.dev/ollie/internal/agent"
	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

// Options say what to start.
type Options struct {
	// Kind is the wire format the scripted model speaks, and the kind of
	// the backends the agent gets: config.KindOpenAI (the default),
	// KindAnthropic or KindOllama.
	Kind string
	// Script is what the model answers; nil is an empty script.
	Script *llmtest.Script
	// Env adds to or overrides the variables the home's configuration is
	// computed from, after those that point at the model.
	Env map[string]string
	// Edit, if set, changes the configuration before the daemon starts,
	// as a user edits ollie.json.
	Edit func(*config.Config)
	// Mount mounts the tree through FUSE at the configured mount point
	// and gives it to tools as $OLLIE. It requires FUSE (testutil.RequireFUSE).
	Mount bool
	// RetryBase is the agent's first back-off; 0 is 10ms.
	RetryBase time.Duration
}

// Stack is what New started. Cleanups of the test stop it all.
type Stack struct {
	LLM    *llmtest.Server
	Cfg    *config.Config
	Exec   *execute.Executor
	Runner *agent.Runner
	D      *daemon.Daemon
	Fsys   *client.Fsys // a 9P client of the daemon
	Mnt    string       // where the tree is mounted, "" if it is not

	t testing.TB
	o Options
}

// New starts a stack.
func New(t testing.TB, o Options) *Stack {
	t.Helper()
	if o.Kind == "" {
		o.Kind = config.KindOpenAI
	}
	if o.Script == nil {
		o.Script = &llmtest.Script{}
	}
	if o.RetryBase == 0 {
		o.RetryBase = 10 * time.Millisecond
	}
	if o.Mount {
		testutil.RequireFUSE(t)
	}
	s := &Stack{t: t, o: o, LLM: llmtest.NewTest(t, o.Script)}
	vars := map[string]string{}
	switch o.Kind {
	case config.KindOpenAI:
		vars["OPENAI_BASE_URL"], vars["OPENAI_API_KEY"] = s.LLM.URL+"/v1", "sk-test"
	case config.KindAnthropic:
		vars["ANTHROPIC_BASE_URL"], vars["ANTHROPIC_API_KEY"] = s.LLM.URL, "sk-ant-test"
	case config.KindOllama:
		vars["OLLAMA_HOST"] = s.LLM.URL
	}
	for k, v := range o.Env {
		vars[k] = v
	}
	s.Cfg = testutil.Home(t, vars)
	if o.Edit != nil {
		o.Edit(s.Cfg)
	}
	s.Exec = Executor(t, s.Cfg)
	if o.Mount {
		s.Mnt = s.Cfg.Mount
	}
	s.startDaemon()
	if o.Mount {
		s.mount()
	}
	return s
}

// startDaemon starts the agent loop and a daemon on the stack's
// configuration, and dials it.
func (s *Stack) startDaemon() {
	s.Runner = agent.New(agent.Options{Config: s.Cfg, Backends: Backends(s.t, s.Cfg, s.o.Kind), Exec: s.Exec,
		Mount: s.Mnt, RetryBase: s.o.RetryBase})
	r := s.Runner
	s.D = testutil.Daemon(s.t, s.Cfg, daemon.Options{Runner: r, CheckAgent: r.CheckAgent, Models: r.Models, BackendState: r.BackendState, InUse: r.InUse, SystemPrompt: r.SystemPrompt})
	s.Fsys = testutil.Dial(s.t, s.Cfg)
}

func (s *Stack) mount() {
	t := s.t
	if err := os.MkdirAll(s.Mnt, 0700); err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", s.Cfg.Socket) }
	srv, err := fusebridge.Mount(context.Background(), s.Mnt, dial, fusebridge.Options{Uname: "tester", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Unmount() }) // before the daemon closes: cleanups run last first
	if _, err := os.Stat(filepath.Join(s.Mnt, "t", "idx")); err != nil {
		t.Fatalf("the tree is not mounted at %s: %v", s.Mnt, err)
	}
}

// Restart stops the daemon and starts another on the same configuration,
// model and executor, as a restart of ollie does. The FUSE mount, if
// any, stays: its connections dial the new daemon.
func (s *Stack) Restart() {
	s.t.Helper()
	s.Fsys.Close()
	s.D.Close()
	s.startDaemon()
}

// Executor is the real executor for cfg, with the test binary as its
// sandbox helper.
func Executor(t testing.TB, cfg *config.Config) *execute.Executor {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := execute.New(execute.Options{Exe: exe, Sandbox: cfg.Sandbox, Home: os.Getenv("HOME"),
		Private: execute.PrivatePaths(cfg), Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// Backends are the configured backends of kind ("" for every kind).
func Backends(t testing.TB, cfg *config.Config, kind string) []backend.Backend {
	t.Helper()
	var bes []backend.Backend
	for _, bc := range cfg.Backends {
		if kind != "" && bc.Kind != kind {
			continue
		}
		be, err := backend.New(bc, cfg.Secrets[bc.Name], nil)
		if err != nil {
			t.Fatal(err)
		}
		bes = append(bes, be)
	}
	return bes
}
