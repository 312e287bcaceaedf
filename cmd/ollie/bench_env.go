package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/ninep/client"
)

// benchEnv is what benchmark sections share: a scratch directory, and a
// private daemon and mount, started by the first section that asks and
// stopped at the end of the run.
type benchEnv struct {
	ctx    context.Context
	n      int    // runs per operation
	dir    string // scratch directory, removed at the end
	stderr io.Writer
	undo   []func() // run last first by close
	exe    string   // this program, for helper processes
	exeEnv []string // added to a helper's environment

	d   *daemon.Daemon
	mnt string
}

func newBenchEnv(ctx context.Context, n int, env *Env) (*benchEnv, error) {
	// Under /tmp, not $TMPDIR, so the socket path stays short.
	dir, err := os.MkdirTemp("/tmp", "ollie-bench")
	if err != nil {
		return nil, err
	}
	b := &benchEnv{ctx: ctx, n: n, dir: dir, stderr: env.Stderr, exe: env.Argv0, exeEnv: benchExeEnv}
	b.onClose(func() { os.RemoveAll(dir) })
	return b, nil
}

// benchExeEnv is added to the environment of helper processes; tests,
// whose binary is ollie only when told so, set it.
var benchExeEnv []string

// onClose registers f to run at the end of the run.
func (b *benchEnv) onClose(f func()) { b.undo = append(b.undo, f) }

func (b *benchEnv) close() {
	for i := len(b.undo) - 1; i >= 0; i-- {
		b.undo[i]()
	}
}

// benchFile is the small file the sections read: its content is as long
// as "hello, world\n", the file of the fusebridge Go benchmarks.
const benchFile, benchContent = "m/bench", "hello, world\n"

// daemon returns the private daemon, starting it in a home of its own with
// m/bench in it.
func (b *benchEnv) daemon() (*daemon.Daemon, error) {
	if b.d != nil {
		return b.d, nil
	}
	vars := map[string]string{"HOME": filepath.Join(b.dir, "home"), "XDG_RUNTIME_DIR": filepath.Join(b.dir, "run")}
	cfg, err := config.Load(config.Env{Get: func(k string) string { return vars[k] }, UID: os.Getuid()}, "")
	if err != nil {
		return nil, err
	}
	p := filepath.Join(cfg.DataDir, filepath.FromSlash(benchFile))
	if err := os.MkdirAll(filepath.Dir(p), 0700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p, []byte(benchContent), 0600); err != nil {
		return nil, err
	}
	d, err := daemon.Start(cfg, daemon.Options{Log: log.New(b.stderr, "ollie bench: daemon: ", 0)})
	if err != nil {
		return nil, err
	}
	b.d = d
	b.onClose(func() { d.Close() })
	return d, nil
}

// dial attaches a 9P client to the private daemon.
func (b *benchEnv) dial() (*client.Fid, error) {
	d, err := b.daemon()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(b.ctx, "unix", d.Config.Socket)
	if err != nil {
		return nil, err
	}
	b.onClose(func() { c.Close() })
	return c.Attach(b.ctx, "bench", "")
}

// mount returns the mount point of the private daemon's tree, mounting it
// in this process, as `ollie serve -mount` does.
func (b *benchEnv) mount() (string, error) {
	if b.mnt != "" {
		return b.mnt, nil
	}
	d, err := b.daemon()
	if err != nil {
		return "", err
	}
	mnt := filepath.Join(b.dir, "mnt")
	if err := os.Mkdir(mnt, 0700); err != nil {
		return "", err
	}
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", d.Config.Socket) }
	logf := log.New(b.stderr, "", 0).Printf
	srv, err := fusebridge.Mount(b.ctx, mnt, dial, fusebridge.Options{Uname: "bench", Logf: logf})
	if err != nil {
		return "", fmt.Errorf("mount: %w", err)
	}
	b.mnt = mnt
	b.onClose(func() { srv.Unmount() })
	return mnt, nil
}
