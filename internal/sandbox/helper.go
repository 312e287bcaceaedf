package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// HelperCommand is the hidden ollie command that runs HelperMain.
const HelperCommand = "sandbox-exec"

// Descriptors the helper receives. The script is the only one the
// program inherits.
const (
	ScriptFD  = 3 // the inline code, read by the interpreter as /dev/fd/3
	statusFD  = 4 // the helper writes why it failed; closed by a successful exec
	rulesetFD = 5 // the Landlock ruleset
)

// spec is what the daemon tells the helper, as JSON in its first argument.
type spec struct {
	Mode   Mode          `json:"mode"`
	Flags  uint32        `json:"flags,omitempty"`
	Limits config.Limits `json:"limits"`
	Deny   []int         `json:"deny,omitempty"`
}

// Cmd is one program to start under a prepared policy.
type Cmd struct {
	Helper   string   // the ollie executable, re-executed as the helper
	Path     string   // absolute path of the program
	Args     []string // its argv, Args[0] included
	Env      []string
	Dir      string
	Script   *os.File // becomes ScriptFD in the program; may be nil
	Elevated bool     // run outside the sandbox (after consent)
	Stdin    io.Reader
	Stdout   *os.File
	Stderr   *os.File
}

// Start starts c through the helper in a new process group whose id is
// the returned command's pid, and returns once the helper has exec'd the
// program. If the helper could not confine itself or exec, Start reaps it
// and returns why.
func (pr *Prepared) Start(c Cmd) (*exec.Cmd, error) {
	s := spec{Mode: pr.Mode, Flags: pr.flags, Limits: pr.Policy.Limits, Deny: pr.Policy.DenyFamilies}
	if c.Elevated {
		s = spec{Mode: Elevated}
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
	args := append([]string{HelperCommand, "--", string(js), c.Path}, c.Args...)
	cmd := exec.Command(c.Helper, args...)
	cmd.Args[0] = "ollie"
	cmd.Env, cmd.Dir = c.Env, c.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = []*os.File{c.Script, statusW, nil}
	if s.Mode == Landlock {
		cmd.ExtraFiles[2] = pr.ruleset
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	statusW.Close()
	if err != nil {
		return nil, errs.E(errs.Other, "sandbox: starting helper", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(statusR, 4096))
	if len(msg) > 0 {
		cmd.Wait()
		return nil, helperError(string(msg))
	}
	return cmd, nil
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

// HelperMain is the helper: it confines its own process and execs the
// program. Its arguments are the JSON spec, the program's path and argv.
// It returns only on failure, with an exit status; the reason goes to
// the daemon through the status descriptor.
func HelperMain(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	var report io.Writer = os.Stderr
	if _, err := unix.FcntlInt(statusFD, unix.F_GETFD, 0); err == nil {
		report = os.NewFile(statusFD, "status")
		syscall.CloseOnExec(statusFD)
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(report, "%v", err)
		return code
	}
	if len(args) < 3 {
		return fail(125, fmt.Errorf("usage: ollie %s -- SPEC PATH ARGV0 [ARG...]", HelperCommand))
	}
	var s spec
	if err := json.Unmarshal([]byte(args[0]), &s); err != nil {
		return fail(125, fmt.Errorf("bad helper spec: %v", err))
	}
	// Confinement below is per thread (no-new-privs, Landlock before ABI
	// 8, capabilities, seccomp) and exec keeps only the calling thread, so
	// all of it must happen on one thread, never handed back to the Go
	// scheduler.
	runtime.LockOSThread()
	if err := confine(s); err != nil {
		return fail(125, err)
	}
	err := syscall.Exec(args[1], args[2:], os.Environ())
	code := 126
	if err == syscall.ENOENT {
		code = 127
	}
	return fail(code, fmt.Errorf("exec %s: %v", args[1], err))
}

// confine applies s to the calling thread and, for limits, the process.
func confine(s spec) error {
	if s.Mode == Elevated {
		return nil
	}
	if err := setLimits(s.Limits); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no-new-privs: %v", err)
	}
	if s.Mode == Landlock {
		syscall.CloseOnExec(rulesetFD)
		if err := ll.LandlockRestrictSelf(rulesetFD, s.Flags); err != nil {
			return fmt.Errorf("landlock restrict: %v", err)
		}
		unix.Close(rulesetFD)
	}
	if err := dropCaps(); err != nil {
		return err
	}
	if err := installSeccomp(s.Deny); err != nil {
		return err
	}
	// Last, so that the Go runtime can still start threads above even
	// when the user is near the limit.
	return setLimit(unix.RLIMIT_NPROC, uint64(s.Limits.Procs))
}

func setLimits(l config.Limits) error {
	for _, r := range []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_AS, uint64(l.MemoryMB) << 20},
		{unix.RLIMIT_FSIZE, uint64(l.FileMB) << 20},
		{unix.RLIMIT_NOFILE, uint64(l.Files)},
		{unix.RLIMIT_CPU, uint64(l.CPUSecs)},
	} {
		if r.v == 0 && r.res != unix.RLIMIT_CORE {
			continue
		}
		if err := setLimit(r.res, r.v); err != nil {
			return err
		}
	}
	return nil
}

// setLimit lowers resource res to v (0 leaves it alone, except for core
// dumps, which are always off).
func setLimit(res int, v uint64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(res, &cur); err != nil {
		return fmt.Errorf("getrlimit %d: %v", res, err)
	}
	if v == 0 && res != unix.RLIMIT_CORE {
		return nil
	}
	if v > cur.Max {
		v = cur.Max
	}
	if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
		return fmt.Errorf("setrlimit %d: %v", res, err)
	}
	return nil
}

// dropCaps empties the calling thread's capability sets and bounding set,
// so that a daemon running as root starts programs with no privilege
// beyond file ownership: uid 0 without CAP_DAC_OVERRIDE, CAP_SYS_ADMIN,
// CAP_SYS_MODULE or CAP_SYS_BOOT.
func dropCaps() error {
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			break // past the last capability this kernel knows
		}
		if err == unix.EPERM {
			break // no CAP_SETPCAP: an ordinary user, who gains nothing by exec
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %v", err)
	}
	return nil
}
