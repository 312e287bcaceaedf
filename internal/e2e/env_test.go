package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/ninep"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

// hangTimeout bounds waits that only exist to turn a hang into a failure.
const hangTimeout = 20 * time.Second

// env is one test's real daemon, in this process, and a real FUSE mount
// of its tree.
type env struct {
	t      *testing.T
	cfg    *config.Config
	runner *testutil.EchoRunner
	opts   daemon.Options     // of the daemon
	mopts  fusebridge.Options // of the mount
	mnt    string
	work   string // scratch directory outside the mount, $W in scripts
	srv    *fusebridge.Server
	log    *testutil.LogBuf

	mu sync.Mutex
	d  *daemon.Daemon // replaced by restart
}

// start starts a daemon in a fresh home and mounts its tree. Each of
// tune, if any, may change the daemon's or the mount's options.
func start(t *testing.T, tune ...func(*env)) *env {
	t.Helper()
	testutil.RequireFUSE(t)
	e := &env{t: t, cfg: testutil.Home(t, nil), runner: testutil.NewEchoRunner(), log: &testutil.LogBuf{}}
	e.opts = daemon.Options{Runner: e.runner, Log: testLogger(e.log)}
	e.mopts = fusebridge.Options{Uname: "tester", Logf: e.log.Logf}
	for _, f := range tune {
		f(e)
	}
	e.startDaemon()
	e.work = t.TempDir()
	e.mnt = filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(e.mnt, 0755); err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", e.cfg.Socket) }
	srv, err := fusebridge.Mount(context.Background(), e.mnt, dial, e.mopts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(func() {
		e.runner.Release()
		srv.Unmount()
		e.daemon().Close()
		if t.Failed() {
			t.Logf("mount log:\n%s", e.log)
		}
	})
	return e
}

func (e *env) startDaemon() {
	d, err := daemon.Start(e.cfg, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.d = d
	e.mu.Unlock()
}

func (e *env) daemon() *daemon.Daemon {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.d
}

// sh runs a bash script with $M set to the mount point ($CFG and $DATA
// to the daemon's directories on disk, $W to a scratch directory) and fails the test
// if it fails. It runs from outside the mount, as go-fuse advises: a
// process whose cwd is in the mount can deadlock the test's own FUSE
// server on exit.
func (e *env) sh(script string) string {
	e.t.Helper()
	out, err := e.try(script)
	if err != nil {
		e.t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

// try runs a bash script and returns its output and error.
func (e *env) try(script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hangTimeout)
	defer cancel()
	cmd := e.command(ctx, script)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		e.t.Fatalf("%s: hung", script)
	}
	return string(out), err
}

func (e *env) command(ctx context.Context, script string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = filepath.Dir(e.mnt)
	cmd.Env = append(os.Environ(), "M="+e.mnt, "LC_ALL=C",
		"CFG="+e.cfg.ConfigDir, "DATA="+e.cfg.DataDir, "W="+e.work)
	return cmd
}

// fails runs a script that must fail with a message containing want.
func (e *env) fails(script, want string) string {
	e.t.Helper()
	out, err := e.try(script)
	if err == nil || !strings.Contains(out, want) {
		e.t.Errorf("%s: %v %q; want failure with %q", script, err, out, want)
	}
	return out
}

// disk reads a file of the daemon's directories directly, not through
// the tree: what is really on disk.
func (e *env) disk(base, rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(base, rel))
	return string(b), err == nil
}

// waitFor turns a hang into a failure.
func waitFor[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(hangTimeout):
		t.Fatalf("%s: hung", what)
		panic("unreachable")
	}
}

// ops returns how many 9P requests of a kind ("walk", "read" ...) the
// daemon has served.
func (e *env) ops(kind string) uint64 {
	i := slices.Index(ninep.OpNames[:], kind)
	if i < 0 {
		e.t.Fatalf("no 9P counter %q", kind)
	}
	return e.daemon().Server.Stats.Ops[i].Load()
}
