package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/fusebridge"
)

var startFlags serverFlags

func init() {
	register(&command{
		name:  "start",
		args:  "[-socket PATH] [-listen ADDR] [-mount DIR | -nomount]",
		short: "start the daemon in the background and mount the tree",
		long: `Start 'ollie serve' in the background, detached from the terminal, with
its log in $XDG_STATE_HOME/ollie/ollie.log and its pid in ollie.pid there.
The tree is mounted at the configured mount point (default ~/mnt/ollie)
unless -nomount is given. Returns once the daemon answers on its socket.
Starting an already running daemon is not an error. With "web":
"127.0.0.1:PORT" in ollie.json it also starts 'ollie web' there and
prints its URL (which is in the log too).`,
		flags: func(fs *flag.FlagSet) {
			startFlags.declare(fs, "mount the tree at `DIR` (default from the config: ~/mnt/ollie)")
			fs.BoolVar(&startFlags.nomnt, "nomount", false, "do not mount the tree")
		},
		run: runStart,
	})
}

func runStart(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	c := env.Config
	if err := startFlags.apply(c); err != nil {
		return err
	}
	if pid := runningPid(c.StateDir, c.Socket); pid > 0 {
		fmt.Fprintf(env.Stdout, "ollie is already running (pid %d) on %s\n", pid, c.Socket)
		return nil
	}
	mnt := c.Mount
	if startFlags.mount != "" {
		mnt = absPath(startFlags.mount)
	}
	argv := []string{}
	if c.File != "" {
		argv = append(argv, "-config", c.File)
	}
	argv = append(argv, "serve", "-socket", c.Socket)
	if c.Listen != "" {
		argv = append(argv, "-listen", c.Listen)
	}
	if !startFlags.nomnt {
		if err := prepareMountPoint(mnt); err != nil {
			return err
		}
		argv = append(argv, "-mount", mnt)
	}
	if err := os.MkdirAll(c.StateDir, 0700); err != nil {
		return err
	}
	logPath := filepath.Join(c.StateDir, "ollie.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0600)
	if err != nil {
		return err
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, 2)
	cmd := exec.Command(env.Argv0, argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start daemon: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := waitReady(ctx, c.Socket, mnt, !startFlags.nomnt, exited); err != nil {
		cmd.Process.Signal(syscall.SIGTERM)
		return fmt.Errorf("%v; its log says:\n%s", err, logTail(logPath, logStart))
	}
	fmt.Fprintf(env.Stdout, "ollie running (pid %d)\n  socket %s\n", cmd.Process.Pid, c.Socket)
	if !startFlags.nomnt {
		fmt.Fprintf(env.Stdout, "  tree   %s\n", mnt)
	}
	fmt.Fprintf(env.Stdout, "  log    %s\n", logPath)
	if c.Web != "" {
		u, err := startWeb(ctx, env, logf, logPath)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "  web    %s\n", u)
	}
	return nil
}

// startWeb starts `ollie web` on the configured address, detached like
// the daemon, with its output in the daemon's log, and returns the URL
// it printed there. It ends by itself when the daemon does.
func startWeb(ctx context.Context, env *Env, logf *os.File, logPath string) (string, error) {
	c := env.Config
	from, _ := logf.Seek(0, 2)
	argv := []string{}
	if c.File != "" {
		argv = append(argv, "-config", c.File)
	}
	cmd := exec.Command(env.Argv0, append(argv, "web", "-addr", c.Web, "-daemon", c.Socket)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start ollie web: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(logPath)
		if int64(len(b)) > from {
			for _, line := range strings.Split(string(b[from:]), "\n") {
				if strings.HasPrefix(line, "http://") && strings.Contains(line, "/?token=") {
					return line, nil
				}
			}
		}
		select {
		case err := <-exited:
			return "", fmt.Errorf("ollie web exited during start-up (%v); its log says:\n%s", err, logTail(logPath, from))
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	return "", fmt.Errorf("ollie web did not print its URL within 15s")
}

// waitReady waits until the daemon answers on its socket and, if asked,
// the mount is in place; it fails at once if the daemon exits.
func waitReady(ctx context.Context, socket, mnt string, mounted bool, exited <-chan error) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("the daemon exited during start-up (%v)", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if probe(socket) != nil {
			continue
		}
		if !mounted || fusebridge.IsMountPoint(mnt) {
			return nil
		}
	}
	return fmt.Errorf("the daemon did not become ready within 15s")
}

// logTail returns what the log gained since offset, for error reports.
func logTail(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	b = b[offset:]
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return "  " + strings.ReplaceAll(string(bytes.TrimSpace(b)), "\n", "\n  ")
}

// runningPid returns the pid of a live daemon serving socket, or 0.
func runningPid(stateDir, socket string) int {
	if probe(socket) != nil {
		return 0
	}
	if pid := daemon.ReadPid(stateDir); pid > 0 && alive(pid) {
		return pid
	}
	if pid := daemon.LockPid(socket); pid > 0 && alive(pid) {
		return pid
	}
	return -1 // something answers, but we cannot tell its pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
