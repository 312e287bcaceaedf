package sandbox

// The resident helper, from the daemon's side: started on first use, one
// per ollie executable, replaced when it dies. See serve.go for the
// helper and gate.go for how a program gets through.

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/errs"
)

// errFallback means that the resident helper cannot start a program and
// that nothing was started: the one-shot helper should.
var errFallback = errors.New("sandbox: no resident helper")

const (
	// replyWait bounds each wait for the resident helper. A working one
	// answers in microseconds; past this it is taken for stuck, killed,
	// and what it was doing is finished without it.
	replyWait = 30 * time.Second
	// retryAfter is how long programs go through the one-shot helper
	// after the resident one failed to start.
	retryAfter = time.Minute
)

type resident struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	gone chan struct{} // closed once the helper or its socket is gone

	mu      sync.Mutex
	next    uint64                   // guarded by mu
	pending map[uint64]chan received // guarded by mu: requests in flight
}

// received is a reply with the listener of a "gate" reply.
type received struct {
	reply
	listener *os.File
}

var residents struct {
	mu  sync.Mutex
	m   map[string]*resident // by helper executable
	off map[string]time.Time // helpers whose resident helper failed to start, and until when
}

// residentFor returns the running resident helper of executable helper,
// starting one if there is none.
func residentFor(helper string) (*resident, error) {
	residents.mu.Lock()
	defer residents.mu.Unlock()
	if r := residents.m[helper]; r != nil && !r.isGone() {
		return r, nil
	}
	if time.Now().Before(residents.off[helper]) {
		return nil, errFallback
	}
	r, err := launch(helper)
	if err != nil {
		if residents.off == nil {
			residents.off = map[string]time.Time{}
		}
		residents.off[helper] = time.Now().Add(retryAfter)
		return nil, err
	}
	if residents.m == nil {
		residents.m = map[string]*resident{}
	}
	residents.m[helper] = r
	return r, nil
}

// launch starts `ollie sandbox-exec -serve` and waits until it is ready.
func launch(helper string) (*resident, error) {
	if err := notifySizes(); err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ollie-sandbox"), os.NewFile(uintptr(pair[1]), "ollie-sandbox")
	cmd := exec.Command(helper, HelperCommand, serveFlag)
	cmd.Args[0] = "ollie"
	// The daemon's environment holds its API keys; the helper needs
	// none of it, and each program gets its own.
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{theirs}
	// Its own group: a Ctrl-C meant for a daemon in a terminal is the
	// daemon's to handle.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, err
	}
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	r := &resident{cmd: cmd, conn: c.(*net.UnixConn), gone: make(chan struct{}), pending: map[uint64]chan received{}}
	r.conn.SetReadDeadline(time.Now().Add(replyWait))
	rep, err := r.receive(make([]byte, 4096), make([]byte, unix.CmsgSpace(4)))
	r.conn.SetReadDeadline(time.Time{})
	if err == nil && (rep.Kind != "ready" || rep.Err != "") {
		err = errors.New("sandbox: resident helper: " + rep.Err)
	}
	if err != nil {
		r.conn.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	go r.read()
	return r, nil
}

// receive reads one reply.
func (r *resident) receive(buf, oob []byte) (received, error) {
	n, oobn, _, _, err := r.conn.ReadMsgUnix(buf, oob)
	if err == nil && n == 0 {
		err = io.EOF
	}
	if err != nil {
		return received{}, err
	}
	var rep received
	fds := rights(oob[:oobn])
	err = json.Unmarshal(buf[:n], &rep.reply)
	for i, fd := range fds {
		if i == 0 && err == nil && rep.Kind == "gate" {
			rep.listener = os.NewFile(uintptr(fd), "seccomp-listener")
			continue
		}
		unix.Close(fd)
	}
	return rep, err
}

// read hands replies to the requests they answer until the helper is
// gone, then makes sure it is and reaps it.
func (r *resident) read() {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	for {
		rep, err := r.receive(buf, oob)
		if err != nil {
			break
		}
		r.mu.Lock()
		ch := r.pending[rep.ID]
		r.mu.Unlock()
		if ch == nil {
			if rep.listener != nil {
				rep.listener.Close()
			}
			continue
		}
		ch <- rep
	}
	close(r.gone)
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.conn.Close()
}

func (r *resident) isGone() bool {
	select {
	case <-r.gone:
		return true
	default:
		return false
	}
}

// kill ends a helper taken for stuck; read sees it go.
func (r *resident) kill() { r.cmd.Process.Kill() }

// await returns the next reply to a request, or false once the helper
// is gone without one.
func (r *resident) await(ch chan received) (received, bool) {
	t := time.NewTimer(replyWait)
	defer t.Stop()
	for {
		select {
		case rep := <-ch:
			return rep, true
		case <-r.gone:
			// read dispatches every reply before it closes gone.
			select {
			case rep := <-ch:
				return rep, true
			default:
				return received{}, false
			}
		case <-t.C:
			r.kill()
		}
	}
}

// pass lets one program through the gate behind l (see gate.go),
// killing the helper if it is stuck: then its threads are gone, and the
// gate either sees the program or hangs up.
func (r *resident) pass(l *os.File, s spec) (int, error) {
	pid, setup, timedOut := pass(l, s.Limits, int(replyWait/time.Millisecond))
	if timedOut {
		r.kill()
		pid, setup, _ = pass(l, s.Limits, -1)
	}
	return pid, setup
}

// startResident starts c through the resident helper, or returns
// errFallback having started nothing.
func startResident(c Cmd, s spec, ruleset *os.File) (*Proc, error) {
	r, err := residentFor(c.Helper)
	if err != nil {
		return nil, errFallback
	}
	return r.start(c, s, ruleset)
}

func (r *resident) start(c Cmd, s spec, ruleset *os.File) (*Proc, error) {
	in, err := openStdin(c.Stdin)
	if err != nil {
		return nil, err
	}
	stdout, stderr := orDevNull(c.Stdout), orDevNull(c.Stderr)
	if stdout == nil || stderr == nil {
		in.abort()
		return nil, errs.E(errs.Other, "sandbox: opening /dev/null")
	}
	files := []*os.File{in.f, stdout, stderr}
	if c.Script != nil {
		files = append(files, c.Script)
	}
	if s.Mode == Landlock {
		files = append(files, ruleset)
	}
	req := request{Spec: s, Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, Script: c.Script != nil}
	ch := make(chan received, 2)
	r.mu.Lock()
	r.next++
	req.ID = r.next
	r.pending[req.ID] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.pending, req.ID)
		r.mu.Unlock()
	}()
	err = r.send(req, files)
	in.sent()
	if stdout != c.Stdout {
		stdout.Close()
	}
	if stderr != c.Stderr {
		stderr.Close()
	}
	if err != nil {
		in.abort()
		return nil, errFallback
	}
	return r.finish(ch, s, in)
}

// finish follows a sent request to its end: the program started, or
// why it did not.
func (r *resident) finish(ch chan received, s spec, in *stdin) (*Proc, error) {
	first, ok := r.await(ch)
	switch {
	case !ok:
		in.abort()
		return nil, errFallback // no gate, so no fork
	case first.Kind != "gate":
		in.abort()
		return nil, helperError(first.Err) // nothing was forked
	}
	pid, setup := r.pass(first.listener, s)
	first.listener.Close()
	last, ok := r.await(ch)
	switch {
	case pid == 0:
		in.abort()
		if !ok {
			return nil, errFallback
		}
		if last.Pid > 0 {
			// Forked, but killed before it reached the gate.
			reap(last.Pid)
			return nil, errs.E(errs.Other, "sandbox: the program was killed before it started")
		}
		return nil, helperError(last.Err)
	case setup != nil:
		in.abort()
		reap(pid) // refused at the gate, it exits without exec
		return nil, errs.E(errs.Other, "sandbox: "+setup.Error())
	case ok && last.Err != "":
		in.abort()
		reap(pid)
		return nil, helperError(last.Err)
	}
	// Started. If the helper died before saying so, the exec may still
	// have failed; the program's exit status will tell.
	in.start()
	return &Proc{Pid: pid, wait: func() (syscall.WaitStatus, error) {
		ws, err := reap(pid)
		in.wait()
		return ws, err
	}}, nil
}

// send writes a request with its descriptors.
func (r *resident) send(req request, files []*os.File) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > maxRequest {
		return errFallback
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	_, _, err = r.conn.WriteMsgUnix(b, unix.UnixRights(fds...), nil)
	runtime.KeepAlive(files)
	return err
}

func orDevNull(f *os.File) *os.File {
	if f != nil {
		return f
	}
	f, _ = os.OpenFile(os.DevNull, os.O_RDWR, 0)
	return f
}
