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

// refused are the system calls no stage may make:
//   - setsid and setpgid would take a process out of the stage's process
//     group, which is how the daemon kills every process of a stage;
//   - the keyring calls reach credentials the user's session keeps there;
//   - io_uring creates sockets without the socket call the filter checks.
//
// clone with CLONE_PARENT is refused too: it makes the new process a
// child of the caller's parent, and a stage's first process is the
// daemon's child, so the daemon would be left with zombies it knows
// nothing of. clone3, whose flags the filter cannot see, fails with
// ENOSYS, which makes the C library fall back to clone.
var refused = []uint32{
	unix.SYS_SETSID, unix.SYS_SETPGID,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_IO_URING_SETUP,
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

// filter assembles the program: right architecture or die, refused calls
// fail with EPERM, socket(family, ...) fails with EACCES for the denied
// families, everything else is allowed. With gate, setpgid(_, gatePgid)
// and clone with CLONE_PARENT go to the listener instead of failing: the
// resident helper's own fork of the program is such a clone, made under
// the filter, and the daemon lets that one through (gate.go).
func filter(deny []int, gate bool) []unix.SockFilter {
	const (
		toAllow = iota
		toEPERM
		toEACCES
		toNoSys
		toKill
		toNotify
		next = -1 // fall through
	)
	var p []unix.SockFilter
	// Jumps go to one of the returns at the end; their offsets are only
	// known once the program is complete, so they are patched below.
	type fix struct{ at, jt, jf int }
	var fixes []fix
	load := func(off uint32) {
		p = append(p, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
	}
	jump := func(op uint16, k uint32, jt, jf int) {
		fixes = append(fixes, fix{len(p), jt, jf})
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
	}
	load(offArch)
	jump(unix.BPF_JEQ, auditArch, next, toKill)
	load(offNr)
	if x32Bit != 0 {
		jump(unix.BPF_JGE, x32Bit, toEPERM, next)
	}
	if gate {
		// The gate comes first: setpgid is also among the refused calls.
		// If nr is not setpgid, skip the two instructions of the gate.
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SETPGID, Jt: 0, Jf: 2})
		load(offArg1)
		jump(unix.BPF_JEQ, gatePgid, toNotify, toEPERM)
	}
	for _, nr := range refused {
		jump(unix.BPF_JEQ, nr, toEPERM, next)
	}
	jump(unix.BPF_JEQ, unix.SYS_CLONE3, toNoSys, next)
	parent := toEPERM
	if gate {
		parent = toNotify
	}
	// If nr is not clone, skip the two instructions of the clone check.
	// Its flags are arg0 on every architecture with a filter.
	p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLONE, Jt: 0, Jf: 2})
	load(offArg0)
	jump(unix.BPF_JSET, unix.CLONE_PARENT, parent, toAllow)
	jump(unix.BPF_JEQ, unix.SYS_SOCKET, next, toAllow)
	load(offArg0)
	for _, f := range deny {
		jump(unix.BPF_JEQ, uint32(f), toEACCES, next)
	}
	rets := len(p)
	for _, v := range []uint32{retAllow, retEPERM, retEACCE, retNoSys, retKill, retNotify} {
		p = append(p, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v})
	}
	for _, f := range fixes {
		if f.jt != next {
			p[f.at].Jt = uint8(rets + f.jt - f.at - 1)
		}
		if f.jf != next {
			p[f.at].Jf = uint8(rets + f.jf - f.at - 1)
		}
	}
	return p
}

// installSeccomp loads the filter on the calling thread, which passes it
// to the program it execs. No-new-privs must already be set.
func installSeccomp(deny []int) error {
	if auditArch == 0 {
		return fmt.Errorf("seccomp: no filter for this architecture")
	}
	f := filter(deny, false)
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
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
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, fmt.Errorf("seccomp: %v", errno)
	}
	return int(fd), nil
}
