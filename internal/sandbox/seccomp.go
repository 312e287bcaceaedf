package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The filter's verdicts. Refused calls fail with the errno a program
// expects from a policy, not with a signal, so scripts can carry on.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retEACCE = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

// refused are the system calls no stage may make:
//   - setsid and setpgid would take a process out of the stage's process
//     group, which is how the daemon kills every process of a stage;
//   - the keyring calls reach credentials the user's session keeps there;
//   - io_uring creates sockets without the socket call the filter checks.
var refused = []uint32{
	unix.SYS_SETSID, unix.SYS_SETPGID,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_IO_URING_SETUP,
}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
)

// filter assembles the program: right architecture or die, refused calls
// fail with EPERM, socket(family, ...) fails with EACCES for the denied
// families, everything else is allowed.
func filter(deny []int) []unix.SockFilter {
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	var p []unix.SockFilter
	// Jumps go to one of four returns at the end; their offsets are only
	// known once the program is complete, so they are patched below.
	type fix struct {
		at  int
		ret int // index in rets
		onT bool
	}
	var fixes []fix
	jeq := func(k uint32, ret int) { // if A == k goto ret
		fixes = append(fixes, fix{len(p), ret, true})
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
	}
	jne := func(k uint32, ret int) { // if A != k goto ret
		fixes = append(fixes, fix{len(p), ret, false})
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
	}
	jge := func(k uint32, ret int) { // if A >= k goto ret
		fixes = append(fixes, fix{len(p), ret, true})
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: k})
	}
	const (
		toAllow = iota
		toEPERM
		toEACCES
		toKill
	)
	p = append(p, stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArch))
	jne(auditArch, toKill)
	p = append(p, stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offNr))
	if x32Bit != 0 {
		jge(x32Bit, toEPERM)
	}
	for _, nr := range refused {
		jeq(nr, toEPERM)
	}
	jne(unix.SYS_SOCKET, toAllow)
	p = append(p, stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offArg0))
	for _, f := range deny {
		jeq(uint32(f), toEACCES)
	}
	rets := len(p)
	p = append(p, stmt(unix.BPF_RET|unix.BPF_K, retAllow), stmt(unix.BPF_RET|unix.BPF_K, retEPERM),
		stmt(unix.BPF_RET|unix.BPF_K, retEACCE), stmt(unix.BPF_RET|unix.BPF_K, retKill))
	for _, f := range fixes {
		off := uint8(rets + f.ret - f.at - 1)
		if f.onT {
			p[f.at].Jt = off
		} else {
			p[f.at].Jf = off
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
	f := filter(deny)
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	return nil
}
