package execute

import (
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/who"
)

// stderrKeep is how much of a stage's stderr, head and tail, is kept.
const stderrKeep = 4 << 10

// pipeGrace bounds the wait for a stage's pipes to close once its
// processes are dead. Only an elevated stage, which may leave the process
// group, can hold them open longer.
const pipeGrace = 500 * time.Millisecond

// An outcome is what became of one stage.
type outcome struct {
	job      *job
	stdout   *spool
	stderr   headTail
	exit     int // exit status; -1 when killed by a signal
	sig      syscall.Signal
	timedOut bool
	stopped  bool          // the call was cancelled
	limit    time.Duration // the timeout that applied
	tooLarge bool          // its output was cut off: too large, or outErr
	outErr   error         // why its output could not be kept, past the limit or not
	denied   string        // why an elevated stage did not run
	err      error         // the stage could not start
	notes    []Note        // stderr of the branches that succeeded, for a parallel stage
}

// stderrNotes is what the stages of o that succeeded wrote to stderr.
func (o *outcome) stderrNotes() []Note {
	notes := o.notes
	if s := strings.TrimRight(o.stderr.String(), "\n"); s != "" && o.job != nil {
		notes = append(notes, Note{Stage: o.job.id, Label: o.job.label, Stderr: s})
	}
	return notes
}

func (o *outcome) failed() bool {
	return o.err != nil || o.exit != 0 || o.timedOut || o.tooLarge || o.denied != ""
}

// runLeaf runs one code or tool stage with stdin as its input.
func (r *run) runLeaf(ctx context.Context, j *job, stdin *spool) *outcome {
	o := &outcome{job: j, stdout: newSpool(r.spec.Tmp, r.e.maxStageOutput()), stderr: headTail{max: stderrKeep}}
	if j.stage.Elevated {
		if o.denied = r.elevate(ctx, j); o.denied != "" {
			return o
		}
	}
	o.limit = r.overall
	if j.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, j.timeout)
		defer cancel()
		o.limit = j.timeout
	}
	p, err := r.start(j, stdin)
	if err != nil {
		o.err = err
		return o
	}
	r.wait(ctx, o, p)
	return o
}

// A proc is a started stage: its first process and the read ends of its
// pipes.
type proc struct {
	p          *sandbox.Proc
	outR, errR *os.File
	forget     func() // unregisters the stage's process group (who.Stages)
}

// start gives j its code and pipes and starts it through the helper.
func (r *run) start(j *job, stdin *spool) (*proc, error) {
	var script *os.File
	if j.script != nil {
		f, err := memfd(j.script)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		script = f
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	forget := func() {}
	cmd := sandbox.Cmd{
		Helper: r.e.helper, Path: j.path, Args: j.argv, Env: r.env, Dir: r.spec.Cwd,
		Script: script, Elevated: j.stage.Elevated, OneShot: r.e.o.OneShot,
		Stdin: stdin.Reader(), Stdout: outW, Stderr: errW,
	}
	if !j.stage.Elevated {
		// The tree knows the stage by its process group from before its
		// first instruction; an elevated stage runs as the user who
		// allowed it.
		cmd.Admit = func(pgid int) { forget = who.Stages.Add(pgid, r.spec.Session) }
	}
	sp, err := r.prep.Start(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		forget()
		outR.Close()
		errR.Close()
		return nil, err
	}
	return &proc{sp, outR, errR, forget}, nil
}

// wait collects p's output into o until its first process exits, ctx is
// done or the output is too large, then kills its process group.
func (r *run) wait(ctx context.Context, o *outcome, p *proc) {
	pgid := p.p.Pid
	var copies sync.WaitGroup
	tooBig := make(chan struct{})
	copies.Add(2)
	go func() {
		defer copies.Done()
		// Any write error stops the stage: a pipe no one reads would
		// hold it until its timeout.
		if _, err := io.Copy(o.stdout, p.outR); err != nil {
			o.outErr = err
			close(tooBig)
		}
	}()
	go func() {
		defer copies.Done()
		io.Copy(&o.stderr, p.errR)
	}()
	exited := watchExit(pgid)
	select {
	case <-exited:
	case <-ctx.Done():
		o.timedOut = ctx.Err() == context.DeadlineExceeded
		o.stopped = !o.timedOut
	case <-tooBig:
		o.tooLarge = true
	}
	// The stage is over when its first process is: whatever it left
	// running in the background goes with it.
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
	p.forget()
	ws, _ := p.p.Wait() // it has exited: the only error would be a bug
	waitPipes(&copies, p.outR, p.errR)
	o.exit = ws.ExitStatus()
	if ws.Signaled() {
		o.exit, o.sig = -1, ws.Signal()
	}
	if o.exit == 0 && (o.timedOut || o.tooLarge) {
		o.exit = -1
	}
}

// waitPipes waits for the output copies to reach the end of their pipes,
// closing the pipes if something outside the group keeps them open.
func waitPipes(copies *sync.WaitGroup, pipes ...*os.File) {
	done := make(chan struct{})
	go func() { copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(pipeGrace):
		for _, p := range pipes {
			p.Close()
		}
		<-done
	}
	for _, p := range pipes {
		p.Close()
	}
}

// memfd returns a sealed in-memory file holding code. The interpreter
// reads it as /dev/fd/3: no file in the workspace, no limit on size, and
// Landlock allows it, since a memfd lives on no mounted file system.
func memfd(code []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("ollie-code", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, errs.E(errs.Other, "execute: memfd", err)
	}
	f := os.NewFile(uintptr(fd), "ollie-code")
	if _, err := f.Write(code); err != nil {
		f.Close()
		return nil, errs.E(errs.Other, "execute: memfd", err)
	}
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL)
	// Perl reads /dev/fd/N from the descriptor itself rather than
	// reopening it, so the offset must be back at the start.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, errs.E(errs.Other, "execute: memfd", err)
	}
	return f, nil
}

func (e *Executor) maxStageOutput() int64 { return int64(e.o.Sandbox.MaxStageOutputMB) << 20 }

// watchExit returns a channel closed once child pid has exited. It
// waits with WNOWAIT, which leaves the child a zombie: its pid, the
// group's id, cannot be reused before the group is killed and the child
// reaped. The wait is on a pidfd in Go's poller, so a running stage
// holds no thread (a burst of stages would otherwise block one thread
// each in waitid, and the runtime keeps the threads it made); where a
// pidfd cannot be polled, a goroutine blocks in waitid as before.
func watchExit(pid int) <-chan struct{} {
	exited := make(chan struct{})
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		go func() {
			var info unix.Siginfo
			for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
			}
			close(exited)
		}()
		return exited
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	go func() {
		defer close(exited)
		defer f.Close()
		var rerr error
		if rc, err := f.SyscallConn(); err == nil {
			// The pidfd turns readable when the process exits.
			rerr = rc.Read(func(fd uintptr) bool {
				var info unix.Siginfo
				err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
				return err != nil && err != unix.EINTR || info.Signo != 0
			})
		} else {
			rerr = err
		}
		if rerr != nil {
			// Not pollable: block instead.
			var info unix.Siginfo
			for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
			}
		}
	}()
	return exited
}
