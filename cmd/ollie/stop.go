package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/daemon"
)

func init() {
	register(&command{
		name:  "stop",
		args:  "",
		short: "stop the background daemon",
		long: `Send SIGTERM to the daemon, which unmounts its tree, closes its
sessions and exits; wait for it. After 10 seconds it is killed. Stopping
a daemon that is not running is not an error.`,
		run: runStop,
	})
}

func runStop(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	c := env.Config
	pid := daemon.ReadPid(c.StateDir)
	if pid <= 0 || !alive(pid) {
		pid = daemon.LockPid(c.Socket)
	}
	if pid <= 0 || !alive(pid) {
		cleanDeadMount(c.Mount)
		fmt.Fprintln(env.Stdout, "ollie is not running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal pid %d: %v", pid, err)
	}
	for i := 0; i < 500 && alive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		cleanDeadMount(c.Mount)
		return fmt.Errorf("daemon (pid %d) did not stop within 10s and was killed", pid)
	}
	fmt.Fprintf(env.Stdout, "ollie stopped (pid %d)\n", pid)
	return nil
}
