package sandbox

// The resident helper, from the daemon's side: started on first use, one
// per ollie executable, replaced when it dies. See serve.go for the
// helper and gate.go for how a program gets through.

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
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

// A resident is a running resident helper. Requests go on its socket;
// each carries a socket of its own for the replies, so that the daemon
// reads them without a go-between.
type resident struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	gone chan struct{} // closed once the helper or its socket is gone
}

var residents struct {
	mu      sync.Mutex
	m       map[string]*resident // by helper executable
	off     map[string]time.Time // helpers whose resident helper failed to start, and until when
	stopped bool                 // Stop was called: no resident helper starts again
}

// residentFor returns the running resident helper of executable helper,
// starting one if there is none.
func residentFor(helper string) (*resident, error) {
	residents.mu.Lock()
	defer residents.mu.Unlock()
	if r := residents.m[helper]; r != nil && !r.isGone() {
		return r, nil
	}
	if residents.stopped || time.Now().Before(residents.off[helper]) {
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

// launch starts `ollie-sandbox sandbox-exec -build=B -serve` and waits until it is ready.
func launch(helper string) (*resident, error) {
	if err := notifySizes(); err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ollie-sandbox"), os.NewFile(uintptr(pair[1]), "ollie-sandbox")
	cmd := serveCmd(helper, theirs, userNamespaceHelper())
	err = cmd.Start()
	if err != nil && userNamespaceHelper() {
		// No user namespace for the mount namespaces of protect.go: the
		// helper starts without one, and a program that needs
		// protection is refused.
		cmd = serveCmd(helper, theirs, false)
		err = cmd.Start()
	}
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, err
	}
	fail := func(err error) (*resident, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	setTimeout(int(ours.Fd()), replyWait)
	rep, _, err := receive(int(ours.Fd()))
	if err == nil && (rep.Kind != "ready" || rep.Err != "") {
		err = errors.New("sandbox: resident helper: " + rep.Err)
	}
	setTimeout(int(ours.Fd()), 0)
	if err != nil {
		ours.Close()
		return fail(err)
	}
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return fail(err)
	}
	r := &resident{cmd: cmd, conn: c.(*net.UnixConn), gone: make(chan struct{})}
	go r.watch()
	return r, nil
}

// serveCmd is the command of the resident helper, its end of the socket
// being theirs; userns starts it in a user namespace of its own.
func serveCmd(helper string, theirs *os.File, userns bool) *exec.Cmd {
	cmd := exec.Command(helper, HelperCommand, buildFlag+Build(), serveFlag)
	// The stages' cgroups, which it empties when the daemon dies, and
	// where its ready threads wait on a v1 hierarchy (serve.go).
	if r, err := stageCgroups(); err == nil {
		cmd.Args = append(cmd.Args, r.dir)
		if !r.v2 {
			cmd.Args = append(cmd.Args, placeFlag+r.dir)
		}
	}
	if g, err := ownV2Cgroup(); err == nil {
		cmd.Args = append(cmd.Args, filepath.Join(g, "ollie-"+strconv.Itoa(os.Getpid())))
	}
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
	if userns {
		inUserNamespace(cmd.SysProcAttr)
	}
	return cmd
}

// watch waits for the helper to close its socket, which it only does by
// exiting, then makes sure it is gone and reaps it.
func (r *resident) watch() {
	buf := make([]byte, 1)
	for {
		if _, err := r.conn.Read(buf); err != nil {
			break
		}
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

// stopWait bounds how long Stop waits for a resident helper to end its
// stages and exit before it is killed.
const stopWait = 2 * time.Second

// Stop ends the resident helpers, for the daemon's shutdown: each is told
// the daemon is going (its socket's end, as when the daemon dies), kills
// what is left in the stages' cgroups and exits, and with it go the
// mount namespaces it kept (nscache.go). Those are copies of the host's
// mounts, the tree's own FUSE mount among them, and the kernel keeps a
// FUSE mount's connection while any copy is left: the daemon's unmount
// would wait for them. Programs started after Stop go through the
// one-shot helper.
func Stop() {
	residents.mu.Lock()
	residents.stopped = true
	rs := residents.m
	residents.m = nil
	residents.mu.Unlock()
	for _, r := range rs {
		r.conn.CloseWrite()
		select {
		case <-r.gone:
		case <-time.After(stopWait):
			r.kill()
			<-r.gone
		}
	}
}

// kill ends a helper taken for stuck; watch sees it go.
func (r *resident) kill() { r.cmd.Process.Kill() }

// startSlots bounds the starts in flight through the resident helper.
// Under a burst (hundreds of sessions calling execute_code at once) every
// start beyond these would only queue on the helper's socket and in its
// fork, holding a socketpair, a cgroup and a thread meanwhile; waiting
// here, in order, they hold nothing and start as fast.
var startSlots = make(chan struct{}, 4)

// startResident starts c through the resident helper, or returns
// errFallback having started nothing.
//
// A helper found dead at the request (killed, or crashed, before its
// watcher saw it go) is replaced at once, and the program goes through
// the new one.
func startResident(c Cmd, s spec, ruleset *os.File) (*Proc, error) {
	startSlots <- struct{}{}
	defer func() { <-startSlots }()
	for try := 0; ; try++ {
		r, err := residentFor(c.Helper)
		if err != nil {
			return nil, errFallback
		}
		p, err := r.start(c, s, ruleset)
		if err != errFallback || try > 0 || !r.isGone() {
			return p, err
		}
	}
}

func (r *resident) start(c Cmd, s spec, ruleset *os.File) (*Proc, error) {
	in, err := openStdin(c.Stdin)
	if err != nil {
		return nil, err
	}
	stdout, stderr := orDevNull(c.Stdout), orDevNull(c.Stderr)
	defer func() {
		if stdout != c.Stdout {
			stdout.Close()
		}
		if stderr != c.Stderr {
			stderr.Close()
		}
	}()
	if stdout == nil || stderr == nil {
		in.abort()
		return nil, errs.E(errs.Other, "sandbox: opening /dev/null")
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		in.abort()
		return nil, err
	}
	sock, theirs := pair[0], pair[1]
	defer unix.Close(sock)
	files := []*os.File{in.f, stdout, stderr}
	if c.Script != nil {
		files = append(files, c.Script)
	}
	if s.Mode == Landlock {
		files = append(files, ruleset)
	}
	cg, err := newStageCgroup(s.Limits.Procs, s.Guard)
	if err != nil {
		unix.Close(theirs)
		in.abort()
		return nil, errs.E(errs.Other, "sandbox: "+err.Error())
	}
	req := request{Spec: s, Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, Script: c.Script != nil}
	err = r.send(req, theirs, files)
	unix.Close(theirs)
	in.sent()
	if err != nil {
		// A helper that cannot take a request is of no further use:
		// killed, it is seen gone (and replaced) before this returns.
		r.kill()
		select {
		case <-r.gone:
		case <-time.After(replyWait):
		}
		cg.remove()
		in.abort()
		return nil, errFallback
	}
	setTimeout(sock, replyWait)
	p, err := r.finish(sock, s, in, cg, c.Admit)
	if err != nil {
		cg.remove()
	}
	return p, err
}

// finish follows a sent request to its end on the request's socket: the
// program started, or why it did not.
func (r *resident) finish(sock int, s spec, in *stdin, cg *stageCgroup, admit func(int)) (*Proc, error) {
	first, l, ok := r.await(sock)
	switch {
	case !ok:
		in.abort()
		return nil, errFallback // no gate, so no fork
	case first.Kind != "gate" || l == nil:
		in.abort()
		return nil, helperError(first.Err) // nothing was forked
	}
	if first.Cgroup != "" {
		cg.takePlaced(first.Cgroup)
	}
	pid, setup := r.pass(l, s, cg, admit)
	l.Close()
	last, _, ok := r.await(sock)
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
		cg.remove()
		in.wait()
		return ws, err
	}}, nil
}

// await returns the next reply on a request's socket, or false once the
// helper has closed it without one. A helper that takes longer than
// replyWait is killed, which closes it.
func (r *resident) await(sock int) (reply, *os.File, bool) {
	for {
		rep, l, err := receive(sock)
		switch err {
		case nil:
			return rep, l, true
		case unix.EAGAIN:
			r.kill()
		default:
			return reply{}, nil, false
		}
	}
}

// pass lets one program through the gate behind l (see gate.go),
// killing the helper if it is stuck: then its threads are gone, and the
// gate either sees the program or hangs up.
func (r *resident) pass(l *os.File, s spec, cg *stageCgroup, admit func(int)) (int, error) {
	pid, setup, timedOut := pass(l, s.Limits, cg, int(replyWait/time.Millisecond), admit)
	if timedOut {
		r.kill()
		pid, setup, _ = pass(l, s.Limits, cg, -1, admit)
	}
	return pid, setup
}

// send writes a request on the helper's socket with its descriptors:
// the helper's end of the request's socket (none if sock is -1), then
// files.
func (r *resident) send(req request, sock int, files []*os.File) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > maxRequest {
		return errFallback
	}
	var fds []int
	if sock >= 0 {
		fds = append(fds, sock)
	}
	for _, f := range files {
		fds = append(fds, int(f.Fd()))
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err = r.conn.WriteMsgUnix(b, oob, nil)
	runtime.KeepAlive(files)
	return err
}

// receive reads one reply from sock, blocking, and returns the
// descriptor a "gate" reply carries.
func receive(sock int) (reply, *os.File, error) {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = unix.ECONNRESET
		}
		if err != nil {
			return reply{}, nil, err
		}
		var rep reply
		var l *os.File
		err = json.Unmarshal(buf[:n], &rep)
		for i, fd := range rights(oob[:oobn]) {
			if i == 0 && err == nil && rep.Kind == "gate" {
				l = os.NewFile(uintptr(fd), "seccomp-listener")
				continue
			}
			unix.Close(fd)
		}
		return rep, l, err
	}
}

// setTimeout bounds blocking receives on sock; 0 removes the bound.
func setTimeout(sock int, d time.Duration) {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	unix.SetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

func orDevNull(f *os.File) *os.File {
	if f != nil {
		return f
	}
	f, _ = os.OpenFile(os.DevNull, os.O_RDWR, 0)
	return f
}

// warmCgroups is how many stage cgroups Warm makes ahead: the first
// stage's, and a second for a stage of two programs or the next call.
const warmCgroups = 2

// Warm does what the first sandboxed program of the daemon would
// otherwise wait for: the probe of the kernel's Landlock ABI, the stages'
// cgroups (and warmCgroups of them for the first stages) and the start of
// the resident helper of executable helper. The daemon calls it in the
// background once it serves (internal/idle). A helper that fails to start
// here is reported through logf (an ollie-sandbox of another build, say,
// which refuses to run anything), and fails again at first use.
//
// The helper also makes threads ready for the seccomp filter of each of
// profiles, so that the first stage of each finds one waiting.
func Warm(helper string, logf func(string, ...any), profiles ...config.Profile) {
	if ABI() <= 0 {
		return
	}
	if cg, err := stageCgroups(); err == nil {
		cg.warm(warmCgroups)
	}
	r, err := residentFor(helper)
	if err != nil {
		logf("%v", err)
		return
	}
	for _, p := range profiles {
		_, deny := netPolicy(p)
		r.send(request{Warm: true, Spec: spec{Deny: deny}}, -1, nil)
	}
}
