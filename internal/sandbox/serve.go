package sandbox

// The resident helper: `ollie sandbox-exec -serve`, one process the
// daemon starts once and keeps, which starts every sandboxed program.
//
// For each request it takes a fresh OS thread, confines that thread
// (no-new-privs, Landlock, no capabilities, the seccomp filter with the
// gate: all of them per thread), hands the gate's listener to the daemon
// and forks the program from the thread, which the program inherits all
// of it from. The thread is never given back to the Go scheduler: the
// goroutine ends while locked to it, and Go ends the thread with it. No
// Go runtime starts per program, which was most of what a stage cost.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// serveFD is the resident helper's end of its socket to the daemon.
const serveFD = 3

// maxRequest bounds a request; larger ones (huge environments or
// argument lists) go through the one-shot helper.
const maxRequest = 128 << 10

// request asks the resident helper to start a program. Its descriptors
// are, in order: stdin, stdout, stderr, the script if Script, the
// Landlock ruleset if the mode is Landlock.
type request struct {
	ID     uint64   `json:"id"`
	Spec   spec     `json:"spec"`
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
	Script bool     `json:"script,omitempty"`
}

// A reply is "ready" (once, at start-up; Err says why the helper cannot
// serve), "gate" for a request (carrying the listener, the only
// descriptor a reply has) or "done" for a request: the program's Pid, or
// Err.
type reply struct {
	ID   uint64 `json:"id,omitempty"`
	Kind string `json:"kind"`
	Pid  int    `json:"pid,omitempty"`
	Err  string `json:"err,omitempty"`
}

type server struct{ conn *net.UnixConn }

// serve runs the resident helper until the daemon closes its end.
func serve() int {
	// The main thread must never run a request: a locked goroutine that
	// ends on it leaves it wedged, confined, instead of ending it.
	runtime.LockOSThread()
	// Nothing the daemon left open reaches a program, this socket
	// included: the program gets its stdio and script, nothing else.
	unix.CloseRange(serveFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	// Neither a core file nor ptrace (short of CAP_SYS_PTRACE) shows
	// what the daemon sent.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	f := os.NewFile(serveFD, "ollie-sandbox")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ollie sandbox helper: %v\n", err)
		return 1
	}
	s := &server{conn: c.(*net.UnixConn)}
	if err := selfCheck(); err != nil {
		s.send(reply{Kind: "ready", Err: err.Error()}, -1)
		return 1
	}
	if s.send(reply{Kind: "ready"}, -1) != nil {
		return 1
	}
	buf := make([]byte, maxRequest)
	oob := make([]byte, unix.CmsgSpace(8*4))
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return 0 // the daemon is gone
		}
		fds := rights(oob[:oobn])
		var req request
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || json.Unmarshal(buf[:n], &req) != nil {
			// The daemon never sends such a thing; stop rather than
			// guess, and it falls back to the one-shot helper.
			fmt.Fprintf(os.Stderr, "ollie sandbox helper: bad request\n")
			return 1
		}
		go s.start(req, fds)
	}
}

// start confines the calling goroutine's thread and forks the program
// from it. The thread dies with the goroutine.
func (s *server) start(req request, fds []int) {
	runtime.LockOSThread() // never unlocked: the confinement is the thread's
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	n := 3
	if req.Script {
		n++
	}
	if req.Spec.Mode == Landlock {
		n++
	}
	if len(fds) != n || len(req.Args) == 0 || req.Spec.Mode == Elevated {
		s.done(req.ID, 0, fmt.Errorf("bad request"))
		return
	}
	ruleset := -1
	if req.Spec.Mode == Landlock {
		ruleset = fds[n-1]
	}
	if err := confineThread(req.Spec, ruleset); err != nil {
		s.done(req.ID, 0, err)
		return
	}
	l, err := installGatedSeccomp(req.Spec.Deny)
	if err != nil {
		s.done(req.ID, 0, err)
		return
	}
	// The daemon must hold the listener before there is a child to stop
	// at the gate: this thread does not run again until the child execs.
	err = s.send(reply{ID: req.ID, Kind: "gate"}, l)
	unix.Close(l)
	if err != nil {
		return
	}
	files := make([]uintptr, 0, 4)
	for _, fd := range fds[:3] {
		files = append(files, uintptr(fd))
	}
	if req.Script {
		files = append(files, uintptr(fds[3]))
	}
	pid, err := syscall.ForkExec(req.Path, req.Args, &syscall.ProcAttr{
		Dir: req.Dir, Env: req.Env, Files: files,
		Sys: &syscall.SysProcAttr{Setpgid: true, Pgid: gatePgid, Cloneflags: syscall.CLONE_PARENT},
	})
	if err != nil {
		s.done(req.ID, 0, execError(req.Path, err))
		return
	}
	s.done(req.ID, pid, nil)
}

func (s *server) done(id uint64, pid int, err error) {
	r := reply{ID: id, Kind: "done", Pid: pid}
	if err != nil {
		r.Err = err.Error()
	}
	s.send(r, -1)
}

// send writes one reply, with fd if it is not -1. Replies are single
// datagrams of a SOCK_SEQPACKET socket: concurrent sends never mix.
func (s *server) send(r reply, fd int) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	_, _, err = s.conn.WriteMsgUnix(b, oob, nil)
	return err
}

// rights returns the descriptors passed in oob.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if fs, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, fs...)
		}
	}
	return fds
}

// selfCheck makes sure this kernel can do what the gate needs: a seccomp
// listener, and one that hangs up once no thread is left using its filter,
// which is how the daemon knows that no program is coming.
func selfCheck() error {
	if err := notifySizes(); err != nil {
		return err
	}
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies filtered
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			ch <- result{-1, err}
			return
		}
		fd, err := installGatedSeccomp(nil)
		ch <- result{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		return r.err
	}
	defer unix.Close(r.fd)
	for {
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 10000)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 || fds[0].Revents&unix.POLLHUP == 0 {
			return fmt.Errorf("seccomp listener does not hang up (kernel older than 5.9?)")
		}
		return nil
	}
}
