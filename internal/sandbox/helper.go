package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// HelperCommand is the first argument of the helper, ollie-sandbox or
// ollie, that makes it run HelperMain.
const HelperCommand = "sandbox-exec"

// serveFlag, as the helper's only argument, makes it the resident
// helper (serve.go) instead of the one-shot one.
const serveFlag = "-serve"

// Descriptors the one-shot helper receives. The script is the only one
// the program inherits.
const (
	ScriptFD  = 3 // the inline code, read by the interpreter as /dev/fd/3
	statusFD  = 4 // the helper writes why it failed; closed by a successful exec
	rulesetFD = 5 // the Landlock ruleset
)

// spec is what the daemon tells the helper: as JSON in the one-shot
// helper's first argument, inside a request for the resident one.
type spec struct {
	Mode   Mode          `json:"mode"`
	Flags  uint32        `json:"flags,omitempty"`
	Limits config.Limits `json:"limits"`
	Deny   []int         `json:"deny,omitempty"`
	// Protect are bound read-only in a mount namespace of the program's
	// own before anything else (protect.go).
	Protect []string `json:"protect,omitempty"`
	// Reopen are writable roots inside Protect, bound writable again.
	Reopen []string `json:"reopen,omitempty"`
	// NSKey names the namespace the resident helper may reuse for them.
	NSKey string `json:"ns_key,omitempty"`
	// Cgroup is the stage cgroup the one-shot helper joins before it
	// confines itself (the resident helper's programs are put in theirs
	// at the gate).
	Cgroup string `json:"cgroup,omitempty"`
	Guard  string `json:"guard,omitempty"` // the port guard's cgroup, joined too
}

// Cmd is one program to start under a prepared policy.
type Cmd struct {
	Helper   string   // the helper: ollie-sandbox, or ollie (HelperFor)
	Path     string   // absolute path of the program
	Args     []string // its argv, Args[0] included
	Env      []string
	Dir      string
	Script   *os.File // becomes ScriptFD in the program; may be nil
	Elevated bool     // run outside the sandbox (after consent)
	// OneShot starts the program through a helper process of its own
	// rather than the resident helper: slower, and what an elevated
	// program and every fallback use.
	OneShot bool
	Stdin   io.Reader
	Stdout  *os.File
	Stderr  *os.File
	// Admit, if set, is called with the program's process group id once
	// it exists and before the program runs (so that the daemon knows a
	// stage by its group before the stage can ask it anything).
	Admit func(pgid int)
}

func (pr *Prepared) spec(c Cmd) spec {
	if c.Elevated {
		return spec{Mode: Elevated}
	}
	return spec{Mode: pr.Mode, Flags: pr.flags, Limits: pr.Policy.Limits, Deny: pr.Policy.DenyFamilies,
		Protect: pr.Policy.Protect, Reopen: pr.Policy.Reopen, NSKey: pr.Policy.nsKey, Guard: pr.guard}
}

// Start starts c under the policy in a new process group whose id is
// the returned process's pid, and returns once the program has been
// exec'd. The returned process is a child of the calling process
// whichever way it was started. If the sandbox could not be set up or
// the exec failed, Start reaps what it started and returns why.
//
// A sandboxed program is started by the resident helper (resident.go)
// when it can be: one process for the whole daemon, forking from a
// freshly confined thread. Otherwise, or when c asks for it, a helper
// process of its own confines itself and execs the program.
func (pr *Prepared) Start(c Cmd) (*Proc, error) {
	s := pr.spec(c)
	if !c.OneShot && s.Mode != Elevated {
		p, err := startResident(c, s, pr.ruleset)
		if err != errFallback {
			return p, err
		}
		fallbacks.Add(1)
	}
	return startOneShot(c, s, pr.ruleset)
}

// fallbacks counts the programs that went through the one-shot helper
// because the resident one could not take them.
var fallbacks atomic.Int64

// startOneShot starts c through `ollie-sandbox sandbox-exec -build=B -- SPEC PATH ARGV...`.
func startOneShot(c Cmd, s spec, ruleset *os.File) (*Proc, error) {
	cg, err := newStageCgroup(s.Limits.Procs, s.Guard)
	if err != nil {
		return nil, errs.E(errs.Other, "sandbox: "+err.Error())
	}
	p, err := startHelper(c, s, ruleset, cg)
	if err != nil {
		cg.remove()
	}
	return p, err
}

func startHelper(c Cmd, s spec, ruleset *os.File, cg *stageCgroup) (*Proc, error) {
	if cg != nil {
		s.Cgroup, s.Guard = cg.dir, cg.guard
	}
	js, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusR.Close()
	args := append([]string{HelperCommand, buildFlag + Build(), "--", string(js), c.Path}, c.Args...)
	cmd := exec.Command(c.Helper, args...)
	cmd.Args[0] = "ollie"
	cmd.Env, cmd.Dir = c.Env, c.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = []*os.File{c.Script, statusW, nil}
	if s.Mode == Landlock {
		cmd.ExtraFiles[2] = ruleset
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if len(s.Protect) > 0 && userNamespaceHelper() {
		inUserNamespace(cmd.SysProcAttr)
	}
	err = cmd.Start()
	statusW.Close()
	if err != nil {
		return nil, errs.E(errs.Other, "sandbox: starting helper", err)
	}
	if c.Admit != nil {
		// The helper confines itself before it execs the program, and
		// the status pipe is read only after that.
		c.Admit(cmd.Process.Pid)
	}
	msg, _ := io.ReadAll(io.LimitReader(statusR, 4096))
	if len(msg) > 0 {
		cmd.Wait()
		return nil, helperError(string(msg))
	}
	return &Proc{Pid: cmd.Process.Pid, wait: func() (syscall.WaitStatus, error) {
		err := cmd.Wait()
		cg.remove()
		if _, ok := err.(*exec.ExitError); ok || err == nil {
			return cmd.ProcessState.Sys().(syscall.WaitStatus), nil
		}
		return 0, err
	}}, nil
}

// helperError turns the helper's report into an error of the right kind.
func helperError(msg string) error {
	kind := errs.Other
	switch {
	case strings.Contains(msg, "no such file"):
		kind = errs.NotExist
	case strings.Contains(msg, "permission denied"), strings.Contains(msg, "operation not permitted"):
		kind = errs.Permission
	}
	return errs.E(kind, "sandbox: "+msg)
}

// execError is how both helpers describe a failed exec.
func execError(path string, err error) error { return fmt.Errorf("exec %s: %v", path, err) }

// The helper runs on the process's main thread, whoever calls
// HelperMain (ollie-sandbox's main, ollie's or a test's TestMain): the
// resident helper confines threads for programs and ends them by
// returning from their goroutines locked, and Go cannot end the main
// thread so, only wedge it, still confined, its seccomp listener never
// hanging up. Locking the main goroutine in an init, which Go runs on the
// main thread, keeps it there: the goroutines that end confined then
// never run on it.
func init() {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		runtime.LockOSThread()
	}
}

// Resident says whether the arguments of HelperMain make the resident
// helper, a process that lives as long as the daemon.
func Resident(args []string) bool {
	args, _ = checkBuild(args)
	return len(args) > 0 && args[0] == serveFlag
}

// HelperMain is the helper. With the arguments `-- SPEC PATH ARGV...` it
// confines its own process and execs the program; it returns only on
// failure, with an exit status, the reason going to the daemon through
// the status descriptor. With `-serve` it is the resident helper, which
// returns when the daemon closes its socket.
func HelperMain(args []string) int {
	args, refuse := checkBuild(args)
	if len(args) >= 1 && args[0] == serveFlag {
		return serve(args[1:], refuse)
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	// The status pipe, when the daemon passed one. Go's runtime may hold
	// descriptors of its own from start (it keeps the cgroup's CPU limit
	// open), so an open descriptor 4 is not enough: it must be a pipe's
	// writing end.
	var report io.Writer = os.Stderr
	var st unix.Stat_t
	if fl, err := unix.FcntlInt(statusFD, unix.F_GETFL, 0); err == nil && fl&unix.O_ACCMODE == unix.O_WRONLY &&
		unix.Fstat(statusFD, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
		report = os.NewFile(statusFD, "status")
		syscall.CloseOnExec(statusFD)
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(report, "%v", err)
		return code
	}
	if refuse != nil {
		return fail(125, refuse)
	}
	if len(args) < 3 {
		return fail(125, fmt.Errorf("usage: ollie %s -- SPEC PATH ARGV0 [ARG...]", HelperCommand))
	}
	var s spec
	if err := json.Unmarshal([]byte(args[0]), &s); err != nil {
		return fail(125, fmt.Errorf("bad helper spec: %v", err))
	}
	// Whatever the daemon inherited without close-on-exec stops here:
	// the program gets its stdio and the script, nothing else.
	unix.CloseRange(rulesetFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	// Confinement below is per thread (no-new-privs, Landlock before ABI
	// 8, capabilities, seccomp) and exec keeps only the calling thread, so
	// all of it must happen on one thread, never handed back to the Go
	// scheduler.
	runtime.LockOSThread()
	if s.Mode == Landlock {
		syscall.CloseOnExec(rulesetFD)
	}
	if s.Cgroup != "" || s.Guard != "" {
		// Before anything can fork: the program and all it starts stay
		// in the cgroups.
		if err := (&stageCgroup{dir: s.Cgroup, guard: s.Guard}).add(0); err != nil {
			return fail(125, err)
		}
	}
	if s.Mode != Elevated {
		if err := protect(s.Protect, s.Reopen); err != nil {
			return fail(125, err)
		}
	}
	if err := confine(s); err != nil {
		return fail(125, err)
	}
	if s.Mode == Landlock {
		unix.Close(rulesetFD)
	}
	err := syscall.Exec(args[1], args[2:], os.Environ())
	code := 126
	if err == syscall.ENOENT {
		code = 127
	}
	return fail(code, execError(args[1], err))
}
