package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"ollie.dev/ollie/internal/fusebridge"
)

func init() {
	register(&command{
		name:  "status",
		args:  "",
		short: "say whether the daemon runs, where, and since when",
		long:  `Print the daemon's pid, socket, mount point and log. Exit status 1 if it is not running.`,
		run:   runStatus,
	})
}

const errNotRunning = exitCode(1)

func runStatus(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	c := env.Config
	pid := runningPid(c.StateDir, c.Socket)
	if pid == 0 {
		fmt.Fprintf(env.Stdout, "ollie is not running (socket %s)\n", c.Socket)
		return errNotRunning
	}
	fmt.Fprintf(env.Stdout, "ollie is running (pid %d)\n  socket %s\n", pid, c.Socket)
	if up, err := readTreeFile(ctx, c.Socket, "stats/uptime"); err == nil {
		fmt.Fprintf(env.Stdout, "  uptime %ss\n", trimNL(up))
	}
	m := "not mounted"
	if fusebridge.IsMountPoint(c.Mount) {
		m = "mounted"
	}
	fmt.Fprintf(env.Stdout, "  tree   %s (%s)\n  log    %s\n", c.Mount, m, filepath.Join(c.StateDir, "ollie.log"))
	// What each backend did at its last request (the daemon never probes
	// one to answer this; "-" means not asked yet).
	if b, err := readTreeFile(ctx, c.Socket, "backends"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(l); len(f) >= 5 {
				fmt.Fprintf(env.Stdout, "  backend %s (%s, %s, model %s): last request %s\n", f[0], f[1], f[2], f[3], f[4])
			}
		}
	}
	return nil
}

func trimNL(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return string(b)
}
