package execute

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/testutil"
)

// oneShot runs the tests against the one-shot sandbox helper, a helper
// process per stage, instead of the resident one:
// go test ./internal/execute/ -oneshot
var oneShot = flag.Bool("oneshot", false, "start every stage through a one-shot helper process")

// TestMain lets the test binary serve as the sandbox helper: Start runs
// os.Args[0] with the helper's arguments, and this hook hands them to
// sandbox.HelperMain, the function `ollie sandbox-exec` runs.
func TestMain(m *testing.M) { testutil.SandboxMain(m) }

// fixture is a user with a home full of fake secrets, an ollie
// configuration with a fake key, another session's data, and a session
// whose cwd is a project in the home.
type fixture struct {
	t                        testing.TB
	root, home, cwd, tmp     string
	tools, cfgDir, dataDir   string
	stateDir, runtimeDir     string
	sshKey, awsCreds, cfgKey string
	otherChat                string
	sb                       config.Sandbox
	environ                  []string
	consent                  Consent
	policy                   string
	ports                    sandbox.Guard
}

const (
	fakeKey   = "FAKE-PRIVATE-KEY-0123456789"
	fakeToken = "sk-FAKE-OLLIE-KEY-9876543210"
	otherText = "OTHER-SESSION-PRIVATE-TEXT"
)

func newFixture(t testing.TB) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, root: root, home: filepath.Join(root, "home"), sb: config.DefaultSandbox()}
	f.cwd = filepath.Join(f.home, "proj")
	f.cfgDir = filepath.Join(f.home, ".config", "ollie")
	f.tools = filepath.Join(f.cfgDir, "t")
	f.dataDir = filepath.Join(f.home, ".local", "share", "ollie")
	f.stateDir = filepath.Join(f.home, ".local", "state", "ollie")
	f.runtimeDir = filepath.Join(root, "run", "ollie")
	f.tmp = filepath.Join(f.dataDir, "tmp", "s1")
	f.sshKey = filepath.Join(f.home, ".ssh", "id_ed25519")
	f.awsCreds = filepath.Join(f.home, ".aws", "credentials")
	f.cfgKey = filepath.Join(f.cfgDir, "ollie.json")
	f.otherChat = filepath.Join(f.dataDir, "s", "other", "chat")
	for _, d := range []string{f.cwd, f.tools, f.tmp, f.stateDir, f.runtimeDir} {
		mkdir(t, d)
	}
	write(t, f.sshKey, fakeKey)
	write(t, f.awsCreds, "aws_secret_access_key="+fakeKey)
	write(t, f.cfgKey, `{"backends":[{"name":"x","kind":"openai","api_key":"`+fakeToken+`"}]}`)
	write(t, f.otherChat, otherText)
	f.environ = append(os.Environ(), "OPENAI_API_KEY="+fakeToken, "LANG=C.UTF-8")
	return f
}

func mkdir(t testing.TB, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t testing.TB, path, s string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
}

// with returns a copy of f that reports to t, for subtests.
func (f *fixture) with(t *testing.T) *fixture {
	g := *f
	g.t = t
	return &g
}

func (f *fixture) executor() *Executor {
	f.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		f.t.Fatal(err)
	}
	ex, err := New(Options{
		Exe: exe, Sandbox: f.sb, Home: f.home, Environ: f.environ, OneShot: *oneShot, Ports: f.ports,
		Private: []string{f.cfgDir, f.dataDir, f.stateDir, f.runtimeDir},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return ex
}

func (f *fixture) spec() Spec {
	return Spec{Cwd: f.cwd, Tmp: f.tmp, Tools: f.tools, Policy: f.policy, Consent: f.consent,
		Env: []string{"DAEMON_PID=" + strconv.Itoa(os.Getpid()), "SESSION_VAR=hello"}}
}

// run runs args, given as JSON text, and fails the test on an error.
func (f *fixture) run(args string) *Result {
	f.t.Helper()
	res, err := f.executor().Run(context.Background(), f.spec(), []byte(args))
	if err != nil {
		f.t.Fatalf("run %s: %v", args, err)
	}
	return res
}

// code is the arguments of a single inline stage.
func code(lang, src string) string {
	b, _ := json.Marshal(map[string]any{"steps": []any{map[string]string{"language": lang, "code": src}}})
	return string(b)
}

// steps builds arguments from stages given as Go values.
func steps(st ...Stage) string {
	b, _ := json.Marshal(Args{Steps: st})
	return string(b)
}

func bash(src string) Stage { return Stage{Language: "bash", Code: src} }

func (f *fixture) wantOK(res *Result, want string) {
	f.t.Helper()
	if res.Failed {
		f.t.Fatalf("failed: %s", res)
	}
	if got := string(res.Output); got != want {
		f.t.Fatalf("output %q, want %q", got, want)
	}
}

// noSecret fails the test if any fake secret shows in the result.
func (f *fixture) noSecret(res *Result) {
	f.t.Helper()
	s := res.String()
	for _, secret := range []string{fakeKey, fakeToken, otherText} {
		if strings.Contains(s, secret) {
			f.t.Fatalf("secret leaked into the result:\n%s", s)
		}
	}
}

func contextWithCancelAfter(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(d, cancel)
	return ctx, cancel
}
