package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The filter's verdicts. Refused calls fail with the errno a program
// expects from a policy, not with a signal, so scripts can carry on.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retEACCE  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	retNoSys  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	retNotify = unix.SECCOMP_RET_USER_NOTIF
)

// What the filter refuses is listed in seccomp_rules.go (denied, with
// reasons) and below:
//   - clone with a namespace flag, like unshare: a new user namespace
//     gives back every capability within it;
//   - clone with CLONE_PARENT: it makes the new process a child of the
//     caller's parent, and a stage's first process is the daemon's child,
//     so the daemon would be left with zombies it knows nothing of;
//   - clone3, whose flags the filter cannot see (they are in memory),
//     fails with ENOSYS, which makes the C library fall back to clone;
//   - personality with flags other than Docker's safe ones;
//   - ioctl TIOCSTI, which types into a terminal the stage can reach;
//   - socket with a denied address family, with EACCES.

// A denial is one system call the filter refuses, and why.
type denial struct {
	nr   uint32
	name string
	why  string
}

// gatePgid is the process group a stage started by the resident helper
// asks to join before it execs: setpgid(0, gatePgid). No process group
// can have this id (it is above PID_MAX_LIMIT, 1<<22), so the call can
// only ever mean "stop here": the filter hands it to the daemon, which
// makes the process the leader of its own group, applies the resource
// limits and answers "done" without running the call (see gate.go).
const gatePgid = 0x4f4c4c49 // "OLLI"

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
	offArg1 = 24
)

// Where the filter's jumps go: one of the returns at the end of the
// program, or the next instruction.
const (
	toAllow = iota
	toEPERM
	toEACCES
	toNoSys
	toKill
	toNotify
	next = -1
)

// verdicts are the returns at the end of the program, in the order of
// the to* targets.
var verdicts = []uint32{retAllow, retEPERM, retEACCE, retNoSys, retKill, retNotify}

// A prog is a filter being assembled. Jumps go to a return at the end,
// whose offsets are only known once the program is complete, so they are
// patched by done.
type prog struct {
	p     []unix.SockFilter
	fixes []struct{ at, jt, jf int }
}

func (b *prog) load(off uint32) {
	b.p = append(b.p, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (b *prog) jump(op uint16, k uint32, jt, jf int) {
	b.fixes = append(b.fixes, struct{ at, jt, jf int }{len(b.p), jt, jf})
	b.p = append(b.p, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

// unless skips the n instructions that follow unless the call is nr.
func (b *prog) unless(nr uint32, n int) {
	b.p = append(b.p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jf: uint8(n)})
}

func (b *prog) done() []unix.SockFilter {
	rets := len(b.p)
	for _, v := range verdicts {
		b.p = append(b.p, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v})
	}
	off := func(at, to int) uint8 {
		d := rets + to - at - 1
		if d > 255 {
			panic("seccomp: filter too long for its jumps")
		}
		return uint8(d)
	}
	for _, f := range b.fixes {
		if f.jt != next {
			b.p[f.at].Jt = off(f.at, f.jt)
		}
		if f.jf != next {
			b.p[f.at].Jf = off(f.at, f.jf)
		}
	}
	return b.p
}

// filter assembles the program: right architecture or die, the denied
// calls and the argument checks above fail with EPERM, socket(family,
// ...) fails with EACCES for the denied families, everything else is
// allowed. With gate, setpgid(_, gatePgid) and clone with CLONE_PARENT go
// to the listener instead of failing: the resident helper's own fork of
// the program is such a clone, made under the filter, and the daemon lets
// that one through (gate.go).
func filter(deny []int, gate bool) []unix.SockFilter {
	b := &prog{}
	b.load(offArch)
	b.jump(unix.BPF_JEQ, auditArch, next, toKill)
	b.load(offNr)
	if x32Bit != 0 {
		b.jump(unix.BPF_JGE, x32Bit, toEPERM, next)
	}
	if gate {
		// The gate comes first: setpgid is also among the denied calls.
		b.unless(unix.SYS_SETPGID, 2)
		b.load(offArg1)
		b.jump(unix.BPF_JEQ, gatePgid, toNotify, toEPERM)
	}
	for _, d := range denied {
		b.jump(unix.BPF_JEQ, d.nr, toEPERM, next)
	}
	b.jump(unix.BPF_JEQ, unix.SYS_CLONE3, toNoSys, next)
	parent := toEPERM
	if gate {
		parent = toNotify
	}
	// clone's flags are arg0 on every architecture with a filter.
	b.unless(unix.SYS_CLONE, 3)
	b.load(offArg0)
	b.jump(unix.BPF_JSET, cloneNamespaces, toEPERM, next)
	b.jump(unix.BPF_JSET, unix.CLONE_PARENT, parent, toAllow)
	if len(personalities) > 0 {
		b.unless(unix.SYS_PERSONALITY, 1+len(personalities))
		b.load(offArg0)
		for i, v := range personalities {
			other := next
			if i == len(personalities)-1 {
				other = toEPERM
			}
			b.jump(unix.BPF_JEQ, v, toAllow, other)
		}
	}
	b.unless(unix.SYS_IOCTL, 2)
	b.load(offArg1)
	b.jump(unix.BPF_JEQ, unix.TIOCSTI, toEPERM, toAllow)
	b.jump(unix.BPF_JEQ, unix.SYS_SOCKET, next, toAllow)
	b.load(offArg0)
	for _, f := range deny {
		b.jump(unix.BPF_JEQ, uint32(f), toEACCES, next)
	}
	return b.done()
}

// installSeccomp loads the filter on the calling thread, which passes it
// to the program it execs. No-new-privs must already be set.
func installSeccomp(deny []int) error {
	if auditArch == 0 {
		return fmt.Errorf("seccomp: no filter for this architecture")
	}
	f := filter(deny, false)
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := retry(func() error {
		return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
	}); err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	return nil
}

// installGatedSeccomp loads the filter with the gate on the calling
// thread only (no TSYNC: the other threads of the resident helper stay
// unfiltered) and returns the listener the gate reports to.
func installGatedSeccomp(deny []int) (listener int, err error) {
	if auditArch == 0 {
		return -1, fmt.Errorf("seccomp: no filter for this architecture")
	}
	f := filter(deny, true)
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	fd, errno := rawRetry(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, fmt.Errorf("seccomp: %v", errno)
	}
	return int(fd), nil
}
