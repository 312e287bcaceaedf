package sandbox

// The resident helper: `ollie-sandbox sandbox-exec -serve`, one process the
// daemon starts once and keeps, which starts every sandboxed program.
//
// Each program is forked from an OS thread of its own, confined for it
// (no-new-privs, no capabilities, the seccomp filter with the gate, the
// call's Landlock ruleset: all of them per thread), and the program
// inherits all of it. The thread is never given back to the Go
// scheduler: its goroutine ends while locked to it, and Go ends the
// thread with it. A few such threads are kept ready, confined but for
// Landlock, for each seccomp filter in use, so that a request finds one
// waiting. No Go runtime starts per program, which was most of what a
// stage cost.
//
// On a v1 pids hierarchy (the daemon passes placeFlag) a ready thread
// also waits in a stage cgroup of its own, made for it, so that its
// program is born there: moving a process into a cgroup waits for an RCU
// grace period whenever no move was made in the last few milliseconds
// (the kernel's cgroup_threadgroup_rwsem), 6 to 20 ms that every stage
// of a turn paced by a real model paid at the gate. The thread is moved
// while it waits, before any request; the daemon then only writes the
// stage's pids.max at the gate. (A v2 cgroup cannot hold one thread of a
// process; there the program is moved at the gate as before.)

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// serveFD is the resident helper's end of its socket to the daemon.
const serveFD = 3

// maxRequest bounds a request; larger ones (huge environments or
// argument lists) go through the one-shot helper.
const maxRequest = 128 << 10

// placeFlag, followed by a directory, tells the resident helper where to
// make the v1 stage cgroups its ready threads wait in.
const placeFlag = "-place="

// placedPrefix begins the names of those cgroups; the daemon's own are
// "s" and a number.
const placedPrefix = "h"

// request asks the resident helper to start a program. Its descriptors
// are, in order: the socket to reply on, stdin, stdout, stderr, the
// script if Script, the Landlock ruleset if the mode is Landlock.
//
// A request with Warm set carries no descriptors and starts nothing: it
// has threads made ready for its Spec's filter (Warm in resident.go).
type request struct {
	Warm   bool     `json:"warm,omitempty"`
	Spec   spec     `json:"spec"`
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
	Script bool     `json:"script,omitempty"`
}

// A reply is "ready", once on the helper's socket at start-up (Err says
// why it cannot serve), or, on a request's own socket, "gate" (carrying
// the gate's listener, the only descriptor a reply has, and the Cgroup
// the program will be born in if it was placed) and then "done": the
// program's Pid, or Err.
type reply struct {
	Kind   string `json:"kind"`
	Pid    int    `json:"pid,omitempty"`
	Err    string `json:"err,omitempty"`
	Cgroup string `json:"cgroup,omitempty"`
}

const (
	warmPerFilter = 2 // threads kept ready for each seccomp filter in use
	warmFilters   = 8 // filters for which threads are kept ready
)

type server struct {
	place  string       // where ready threads get a cgroup of their own; "" for nowhere
	placed atomic.Int64 // names the next of those cgroups

	mu      sync.Mutex
	warm    map[string][]chan job // ready threads by seccomp filter; guarded by mu
	warming map[string]int        // threads being made ready; guarded by mu
	closed  bool                  // the daemon is gone: no thread waits any more; guarded by mu
}

// A job is a request with its descriptors.
type job struct {
	req    request
	reply  int    // the request's socket
	fds    []int  // stdin, stdout, stderr, script, ruleset
	fresh  bool   // make a new protection namespace, reuse none (nscache.go)
	cgroup string // the cgroup the thread waited in, "" if none
}

// residentGCPercent is the resident helper's GOGC. What it keeps is a
// few hundred KB; what each stage allocates is garbage by the stage's
// start. At Go's default it let 4.5 MB of heap accumulate between
// collections over the 480 turns of the bench's turn rows; collecting
// every 0.4 MB of garbage, it held 1.7 MB after them, for a collection of
// a heap that small (tens of µs) every few dozen stages.
const residentGCPercent = 10

// serve runs the resident helper until the daemon closes its end. args
// may name the daemon's directory of stage cgroups: when the daemon is
// gone, whatever is left in them is killed, so that no stage outlives
// it (a stage is the daemon's child, and a process cannot ask to die
// with its parent once it is the child of another process's thread).
func serve(args []string, refuse error) int {
	var cgroups []string
	s := &server{warm: map[string][]chan job{}, warming: map[string]int{}}
	for _, a := range args {
		if filepath.IsAbs(a) {
			cgroups = append(cgroups, a)
		} else if d, ok := strings.CutPrefix(a, placeFlag); ok && filepath.IsAbs(d) {
			s.place = d
		}
	}
	// The main thread must never run a request: a locked goroutine that
	// ends on it leaves it wedged, confined, instead of ending it.
	runtime.LockOSThread()
	debug.SetGCPercent(residentGCPercent)
	runtime.MemProfileRate = 0 // nothing reads its heap's samples (cmd/ollie/profile.go)
	// Nothing the daemon left open reaches a program, this socket
	// included: the program gets its stdio and script, nothing else.
	unix.CloseRange(serveFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	// Neither a core file nor ptrace (short of CAP_SYS_PTRACE) shows
	// what the daemon sent.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if refuse == nil {
		refuse = selfCheck()
	}
	if refuse != nil {
		sendReply(serveFD, reply{Kind: "ready", Err: refuse.Error()}, -1)
		return 1
	}
	if sendReply(serveFD, reply{Kind: "ready"}, -1) != nil {
		return 1
	}
	buf := make([]byte, maxRequest)
	oob := make([]byte, unix.CmsgSpace(8*4))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(serveFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			// The daemon is gone, or is going: it closes this end
			// only by exiting. The ready threads end first, leaving
			// their cgroups empty for removeTree.
			s.close()
			for _, d := range cgroups {
				removeTree(d)
			}
			return 0
		}
		fds := rights(oob[:oobn])
		var req request
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) == 0 && len(fds) == 0 && json.Unmarshal(buf[:n], &req) == nil && req.Warm {
			s.prewarm(req.Spec.Deny)
			continue
		}
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || len(fds) < 1 || json.Unmarshal(buf[:n], &req) != nil || req.Warm {
			// The daemon never sends such a thing; stop rather than
			// guess, and it falls back to the one-shot helper.
			fmt.Fprintf(os.Stderr, "ollie sandbox helper: bad request\n")
			return 1
		}
		served.Add(1)
		s.dispatch(job{req: req, reply: fds[0], fds: fds[1:]})
	}
}

// served counts the programs the resident helper was asked to start.
var served atomic.Uint64

// Served is how many programs this process, as the resident helper, was
// asked to start: its own trim watches it (trim.WhenIdle).
func Served() uint64 { return served.Load() }

// dispatch hands j to a ready thread for its filter, or to a new one,
// and has another made ready.
func (s *server) dispatch(j job) {
	if len(j.req.Spec.Protect) > 0 {
		// The mounts are the request's: no thread can be made ready
		// for them, since the filter would then refuse them.
		go s.cold(j)
		return
	}
	key := fmt.Sprint(j.req.Spec.Deny)
	s.mu.Lock()
	var ready chan job
	if w := s.warm[key]; len(w) > 0 {
		ready, s.warm[key] = w[len(w)-1], w[:len(w)-1]
	}
	refill := s.reserveLocked(key, 1)
	s.mu.Unlock()
	if ready != nil {
		ready <- j
	} else {
		go s.cold(j)
	}
	for range refill {
		go s.ready(j.req.Spec.Deny, key)
	}
}

// reserveLocked counts up to n more threads as being made ready for the
// filter key, within warmPerFilter for it and warmFilters filters in all,
// and returns how many the caller is to make.
func (s *server) reserveLocked(key string, n int) int {
	w, known := s.warm[key]
	if !known && len(s.warm) >= warmFilters {
		return 0
	}
	n = min(n, warmPerFilter-len(w)-s.warming[key])
	if n <= 0 {
		return 0
	}
	s.warm[key] = w
	s.warming[key] += n
	return n
}

// prewarm has threads made ready for the filter of deny, up to
// warmPerFilter, before any request needs one.
func (s *server) prewarm(deny []int) {
	key := fmt.Sprint(deny)
	s.mu.Lock()
	n := s.reserveLocked(key, warmPerFilter)
	s.mu.Unlock()
	for range n {
		go s.ready(deny, key)
	}
}

// ready confines its thread as far as it can without a request, then
// waits for one.
func (s *server) ready(deny []int, key string) {
	runtime.LockOSThread() // never unlocked: the confinement is the thread's
	// Placed first, while the thread may still write to the cgroup
	// files; if the rest fails, the thread ends and leaves the cgroup
	// empty, for removeTree.
	cg := s.placeThread()
	l, err := preconfine(deny)
	ch := make(chan job)
	s.mu.Lock()
	s.warming[key]--
	if err == nil && !s.closed {
		s.warm[key] = append(s.warm[key], ch)
	}
	closed := s.closed
	s.mu.Unlock()
	if err != nil || closed {
		if l >= 0 {
			unix.Close(l)
		}
		return // a request then finds no thread ready, and says why
	}
	j, ok := <-ch
	if !ok {
		unix.Close(l)
		return // the helper is stopping
	}
	j.cgroup = cg
	s.start(j, l)
}

// placeThread moves the calling thread, alone, into a new cgroup under
// s.place and returns its directory, or "" where it could not.
func (s *server) placeThread() string {
	if s.place == "" {
		return ""
	}
	for {
		dir := filepath.Join(s.place, placedPrefix+strconv.FormatInt(s.placed.Add(1), 10))
		err := os.Mkdir(dir, 0o755)
		if os.IsExist(err) {
			continue // left by a helper before this one
		}
		if err != nil {
			return ""
		}
		if writeFile(filepath.Join(dir, "tasks"), strconv.Itoa(unix.Gettid())) != nil {
			unix.Rmdir(dir)
			return ""
		}
		return dir
	}
}

// close ends the ready threads: nothing will come for them.
func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, w := range s.warm {
		for _, ch := range w {
			close(ch)
		}
	}
	s.warm = map[string][]chan job{}
}

// cold serves j on a thread confined for it from scratch.
func (s *server) cold(j job) {
	runtime.LockOSThread() // never unlocked: the confinement is the thread's
	sp := j.req.Spec
	err := enterProtected(sp.NSKey, sp.Protect, sp.Reopen, !j.fresh)
	if err == errStaleNS {
		// This thread is in a namespace that no longer protects; it
		// ends with this goroutine, and a new one starts afresh.
		j.fresh = true
		go s.cold(j)
		return
	}
	l := -1
	if err == nil {
		l, err = preconfine(j.req.Spec.Deny)
	}
	if err != nil {
		j.done(0, err)
		j.close()
		return
	}
	s.start(j, l)
}

// preconfine sets no-new-privs, drops every capability and installs the
// seccomp filter with the gate on the calling thread, and returns the
// gate's listener.
func preconfine(deny []int) (listener int, err error) {
	if err := retry(func() error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }); err != nil {
		return -1, fmt.Errorf("no-new-privs: %v", err)
	}
	if err := dropCaps(); err != nil {
		return -1, err
	}
	return installGatedSeccomp(deny)
}

// start finishes confining the calling thread for j, whose filter it
// already has, and forks the program from it.
func (s *server) start(j job, listener int) {
	defer func() {
		if listener >= 0 {
			unix.Close(listener)
		}
		j.close()
	}()
	req := j.req
	n := 3
	if req.Script {
		n++
	}
	if req.Spec.Mode == Landlock {
		n++
	}
	if len(j.fds) != n || len(req.Args) == 0 || req.Spec.Mode == Elevated {
		j.done(0, fmt.Errorf("bad request"))
		return
	}
	if req.Spec.Mode == Landlock {
		if err := restrict(req.Spec, j.fds[n-1]); err != nil {
			j.done(0, err)
			return
		}
	}
	// The daemon must hold the listener before there is a child to stop
	// at the gate: this thread does not run again until the child execs.
	if sendReply(j.reply, reply{Kind: "gate", Cgroup: j.cgroup}, listener) != nil {
		return
	}
	unix.Close(listener)
	listener = -1
	files := make([]uintptr, 0, 4)
	for _, fd := range j.fds[:3] {
		files = append(files, uintptr(fd))
	}
	if req.Script {
		files = append(files, uintptr(j.fds[3]))
	}
	pid, err := syscall.ForkExec(req.Path, req.Args, &syscall.ProcAttr{
		Dir: req.Dir, Env: req.Env, Files: files,
		Sys: &syscall.SysProcAttr{Setpgid: true, Pgid: gatePgid, Cloneflags: syscall.CLONE_PARENT},
	})
	if err != nil {
		j.done(0, execError(req.Path, err))
		return
	}
	j.done(pid, nil)
}

func (j job) done(pid int, err error) {
	r := reply{Kind: "done", Pid: pid}
	if err != nil {
		r.Err = err.Error()
	}
	sendReply(j.reply, r, -1)
}

func (j job) close() {
	unix.Close(j.reply)
	for _, fd := range j.fds {
		unix.Close(fd)
	}
}

// sendReply writes r on socket sock, with descriptor fd unless it is -1.
func sendReply(sock int, r reply, fd int) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	for {
		err = unix.Sendmsg(sock, b, oob, nil, 0)
		if err != unix.EINTR {
			return err
		}
	}
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
		fd, err := preconfine(nil)
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
