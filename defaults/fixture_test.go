package defaults_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/defaults"
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

// The test binary is also the sandbox helper, as ollie itself is.
func TestMain(m *testing.M) { testutil.SandboxMain(m) }

var ctx = context.Background()

// policy is the sandbox profile of the default agent (defaults/a/default.json).
const policy = "workspace"

// fixture runs the shipped tools the way the agent does: execute_code
// calls in the real sandbox, with the installed t/ as the tools directory.
// With a tree (newTree), a real daemon serves the namespace, its sessions
// run the real agent loop against a scripted model, and the tree is
// mounted through real FUSE where $OLLIE points.
type fixture struct {
	t   testing.TB
	cfg *config.Config
	ex  *execute.Executor
	cwd string // the session's working directory
	tmp string // scratch directory for calls outside a session

	llm  *llmtest.Server
	d    *daemon.Daemon
	fsys *client.Fsys
	mnt  string
}

// newFiles is a fixture without a daemon: the tools are installed as the
// daemon installs them on first start.
func newFiles(t testing.TB) *fixture {
	t.Helper()
	cfg := testutil.Home(t, nil)
	if _, err := defaults.Install(cfg.ConfigDir, "t"); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, cfg: cfg, ex: newExecutor(t, cfg), cwd: t.TempDir(), tmp: t.TempDir()}
}

func newExecutor(t testing.TB, cfg *config.Config) *execute.Executor {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := execute.New(execute.Options{Helper: exe, Sandbox: cfg.Sandbox, Home: os.Getenv("HOME"),
		Private: execute.PrivatePaths(cfg), Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// newTree starts a daemon whose sessions talk to a model scripted by sc
// (OpenAI wire format), and mounts its tree at the configured mount point.
func newTree(t *testing.T, sc *llmtest.Script) *fixture {
	t.Helper()
	return newTreeCfg(t, sc, nil)
}

// newTreeCfg is newTree with the configuration changed by edit (when not
// nil) before the daemon starts, as a user edits ollie.json.
func newTreeCfg(t *testing.T, sc *llmtest.Script, edit func(*config.Config)) *fixture {
	t.Helper()
	testutil.RequireFUSE(t)
	if sc == nil {
		sc = &llmtest.Script{}
	}
	llm := llmtest.NewTest(t, sc)
	cfg := testutil.Home(t, map[string]string{"OPENAI_BASE_URL": llm.URL + "/v1", "OPENAI_API_KEY": "sk-test"})
	if edit != nil {
		edit(cfg)
	}
	ex := newExecutor(t, cfg)
	var bes []backend.Backend
	for _, bc := range cfg.Backends {
		if bc.Kind != config.KindOpenAI {
			continue
		}
		be, err := backend.New(bc, cfg.Secrets[bc.Name], nil)
		if err != nil {
			t.Fatal(err)
		}
		bes = append(bes, be)
	}
	r := agent.New(agent.Options{Config: cfg, Backends: bes, Exec: ex, Mount: cfg.Mount, RetryBase: 10 * time.Millisecond})
	d := testutil.Daemon(t, cfg, daemon.Options{Runner: r, Models: r.Models, InUse: r.InUse, SystemPrompt: r.SystemPrompt})
	if err := os.MkdirAll(cfg.Mount, 0700); err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", cfg.Socket) }
	srv, err := fusebridge.Mount(ctx, cfg.Mount, dial, fusebridge.Options{Uname: "tester", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Unmount() }) // before the daemon closes: cleanups run last first
	if _, err := os.Stat(filepath.Join(cfg.Mount, "t", "idx")); err != nil {
		t.Fatalf("the tree is not mounted at %s: %v", cfg.Mount, err)
	}
	return &fixture{t: t, cfg: cfg, ex: ex, cwd: t.TempDir(), tmp: t.TempDir(),
		llm: llm, d: d, fsys: testutil.Dial(t, cfg), mnt: cfg.Mount}
}

// newSession creates a session in the fixture's cwd through s/new and
// returns its id.
func (f *fixture) newSession(name string) string {
	f.t.Helper()
	if err := f.fsys.WriteFile(ctx, "s/new", []byte("cwd="+f.cwd+" name="+name), 0); err != nil {
		f.t.Fatal(err)
	}
	s, ok := f.d.Sessions.Get(name)
	if !ok {
		f.t.Fatalf("session %s was not created", name)
	}
	return s.ID()
}

// call is one execute_code call: its result, and err when nothing ran.
type call struct {
	res *execute.Result
	err error
}

// Out is what the model reads.
func (c call) Out() string {
	if c.err != nil {
		return "error: " + c.err.Error()
	}
	return c.res.String()
}

func (c call) Failed() bool { return c.err != nil || c.res.Failed }

// run makes the call a model would make with these steps, as session id
// ("" for none) with the environment and tree grants the agent gives it.
func (f *fixture) run(id string, steps ...map[string]any) call {
	f.t.Helper()
	return f.runEnv(id, nil, steps...)
}

func (f *fixture) runEnv(id string, env []string, steps ...map[string]any) call {
	f.t.Helper()
	args, err := json.Marshal(map[string]any{"steps": steps, "timeout": 30})
	if err != nil {
		f.t.Fatal(err)
	}
	spec := execute.Spec{Cwd: f.cwd, Tmp: f.tmp, Tools: filepath.Join(f.cfg.ConfigDir, "t"),
		Policy: policy, Session: id}
	if id != "" {
		s, ok := f.d.Sessions.Get(id)
		if !ok {
			f.t.Fatalf("no session %s", id)
		}
		spec.Tmp = s.TmpDir()
		if err := os.MkdirAll(spec.Tmp, 0700); err != nil {
			f.t.Fatal(err)
		}
		spec.Env = agent.ToolEnv(f.mnt, "s/"+id, id)
		spec.Read, spec.Write = agent.TreeGrants(f.cfg.Sandbox, f.mnt, policy, "s/"+id)
	}
	spec.Env = append(spec.Env, env...)
	res, err := f.ex.Run(ctx, spec, args)
	return call{res, err}
}

// tool is a stage running a tool of t/.
func tool(name string, args ...string) map[string]any {
	if args == nil {
		args = []string{}
	}
	return map[string]any{"tool": name, "args": args}
}

// code is a stage of inline code.
func code(language, src string) map[string]any {
	return map[string]any{"language": language, "code": src}
}

// write puts a file in the session's cwd.
func (f *fixture) write(name, content string) string {
	f.t.Helper()
	testutil.WriteFile(f.t, f.cwd, name, content, 0644)
	return filepath.Join(f.cwd, name)
}

func (f *fixture) read(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.cwd, name))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// ok checks that c succeeded and its output has every one of want.
func ok(t *testing.T, c call, want ...string) string {
	t.Helper()
	out := c.Out()
	if c.Failed() {
		t.Fatalf("call failed:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	return out
}

// fails checks that c failed and its output (stderr included) has every
// one of want.
func fails(t *testing.T, c call, want ...string) string {
	t.Helper()
	out := c.Out()
	if !c.Failed() {
		t.Fatalf("call succeeded, want a failure:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	return out
}
