package execute

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/mcpconf"
	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/who"
)

// A Long is a process of a session that outlives the call that needed
// it (a long-lived MCP server behind `ollie-mcp proxy`): started under
// the session's sandbox policy exactly as a stage is, known to the tree
// as one of the session's stages, and ended by Stop, never by a call.
type Long struct {
	Pid    int
	done   chan struct{} // closed once the process has exited
	stop   sync.Once
	forget func()
	wait   func() (syscall.WaitStatus, error)
}

// StartMCP starts ollie's MCP bridge (mcpconf.Program, beside the
// ollie executable) with args (args[0] is the first argument, not the
// program) under spec's policy, in a process group of its own, its
// standard output and error to stdout and stderr. It is the only way in
// for a long-lived process: a caller names the bridge's arguments, never
// a program.
func (e *Executor) StartMCP(spec Spec, args []string, stdout, stderr *os.File) (*Long, error) {
	if spec.Cwd == "" || spec.Tmp == "" {
		return nil, errs.E(errs.Invalid, "execute: spec needs cwd and tmp")
	}
	if _, err := os.Stat(e.mcp); err != nil {
		return nil, errs.E(errs.Unavailable, mcpconf.Program+" is not installed beside "+e.o.Exe)
	}
	pol, err := e.policy(spec)
	if err != nil {
		return nil, err
	}
	prep, err := pol.Prepare(e.o.Sandbox.AllowUnsandboxed)
	if err != nil {
		return nil, err
	}
	// The process is confined from its first instruction: the ruleset is
	// not needed once it runs.
	defer prep.Close()
	l := &Long{done: make(chan struct{}), forget: func() {}}
	p, err := prep.Start(sandbox.Cmd{
		Helper: e.helper, Path: e.mcp, Args: append([]string{mcpconf.Program}, args...),
		Env: e.env(spec, pol), Dir: spec.Cwd, OneShot: e.o.OneShot, Stdout: stdout, Stderr: stderr,
		Admit: func(pgid int) { l.forget = who.Stages.Add(pgid, spec.Session) },
	})
	if err != nil {
		l.forget()
		return nil, err
	}
	l.Pid, l.wait = p.Pid, p.Wait
	go func() {
		// WNOWAIT leaves the leader a zombie, so that its pid, the
		// group's id, is not reused before Stop kills the group.
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		close(l.done)
	}()
	return l, nil
}

// Done is closed when the process has exited, stopped or not.
func (l *Long) Done() <-chan struct{} { return l.done }

// Stop kills the process's whole group, and its cgroup with whatever is
// left in it, and reaps it. It is safe to call more than once.
func (l *Long) Stop() {
	l.stop.Do(func() {
		syscall.Kill(-l.Pid, syscall.SIGKILL)
		<-l.done
		l.forget()
		l.wait() // removes the stage's cgroup, killing what escaped the group
	})
}
