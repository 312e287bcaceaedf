package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter evaluates a filter as the kernel would for one call: the
// few classic BPF instructions filter emits, over struct seccomp_data.
func runFilter(t *testing.T, p []unix.SockFilter, arch uint32, nr int, args ...uint64) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[offNr:], uint32(nr))
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[offArg0+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(p); pc++ {
		in := p[pc]
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(acc == in.K)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			jump(acc >= in.K)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(acc&in.K != 0)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("fell off the end of the filter")
	return 0
}

func TestFilter(t *testing.T) {
	if auditArch == 0 {
		t.Skip("no filter for this architecture")
	}
	deny := []int{unix.AF_UNIX, unix.AF_INET}
	for _, tc := range []struct {
		name string
		gate bool
		arch uint32
		nr   int
		args []uint64
		want uint32
	}{
		{"read", false, auditArch, unix.SYS_READ, nil, retAllow},
		{"other architecture", false, auditArch ^ 1, unix.SYS_READ, nil, retKill},
		{"setsid", true, auditArch, unix.SYS_SETSID, nil, retEPERM},
		{"setpgid(0, 0)", true, auditArch, unix.SYS_SETPGID, []uint64{0, 0}, retEPERM},
		{"setpgid(0, other group)", true, auditArch, unix.SYS_SETPGID, []uint64{0, 1234}, retEPERM},
		{"the gate", true, auditArch, unix.SYS_SETPGID, []uint64{0, gatePgid}, retNotify},
		{"the gate, no gate", false, auditArch, unix.SYS_SETPGID, []uint64{0, gatePgid}, retEPERM},
		{"keyctl", true, auditArch, unix.SYS_KEYCTL, nil, retEPERM},
		{"io_uring", false, auditArch, unix.SYS_IO_URING_SETUP, nil, retEPERM},
		{"unix socket", true, auditArch, unix.SYS_SOCKET, []uint64{unix.AF_UNIX}, retEACCE},
		{"inet socket", false, auditArch, unix.SYS_SOCKET, []uint64{unix.AF_INET}, retEACCE},
		{"inet6 socket", true, auditArch, unix.SYS_SOCKET, []uint64{unix.AF_INET6}, retAllow},
		{"ioctl", true, auditArch, unix.SYS_IOCTL, []uint64{0, gatePgid}, retAllow},
		{"fork by clone", true, auditArch, unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}, retAllow},
		{"thread", false, auditArch, unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, retAllow},
		{"clone a sibling", false, auditArch, unix.SYS_CLONE, []uint64{unix.CLONE_PARENT | uint64(unix.SIGCHLD)}, retEPERM},
		{"clone a sibling, gated", true, auditArch, unix.SYS_CLONE, []uint64{unix.CLONE_PARENT | unix.CLONE_VFORK | unix.CLONE_VM}, retNotify},
		{"clone3", true, auditArch, unix.SYS_CLONE3, nil, retNoSys},
		{"clone3, no gate", false, auditArch, unix.SYS_CLONE3, nil, retNoSys},
		{"unshare", true, auditArch, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWUSER}, retEPERM},
		{"bpf", false, auditArch, unix.SYS_BPF, nil, retEPERM},
		{"clone a user namespace", true, auditArch, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, retEPERM},
		{"clone a sibling in a new namespace, gated", true, auditArch, unix.SYS_CLONE, []uint64{unix.CLONE_PARENT | unix.CLONE_NEWNS}, retEPERM},
		{"personality query", false, auditArch, unix.SYS_PERSONALITY, []uint64{0xffffffff}, retAllow},
		{"personality no aslr", false, auditArch, unix.SYS_PERSONALITY, []uint64{0x0040000}, retEPERM},
		{"tiocsti", true, auditArch, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, retEPERM},
		{"denied family, last", false, auditArch, unix.SYS_SOCKET, []uint64{unix.AF_INET}, retEACCE},
	} {
		if got := runFilter(t, filter(deny, tc.gate), tc.arch, tc.nr, tc.args...); got != tc.want {
			t.Errorf("%s: got %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if x32Bit != 0 {
		if got := runFilter(t, filter(nil, true), auditArch, x32Bit|unix.SYS_SOCKET); got != retEPERM {
			t.Errorf("x32 call: got %#x", got)
		}
	}
}

// stageTries are the calls of seccompTries plus those whose refusal
// depends on their arguments, each made from inside a real stage.
func stageTries(oneShot bool) []try {
	// Under the resident helper, CLONE_PARENT goes to the gate, whose
	// listener is closed once the program has passed: ENOSYS.
	parent := unix.ENOSYS
	if oneShot {
		parent = unix.EPERM
	}
	var tries []try
	for _, d := range denied {
		if d.nr == unix.SYS_SETPGID {
			continue // made with its own arguments below
		}
		// Zero arguments: where the kernel would get to look at them it
		// fails with EFAULT, EINVAL or EBADF, never with EPERM.
		tries = append(tries, try{name: d.name, nr: uintptr(d.nr), want: unix.EPERM})
	}
	tries = append(tries, try{name: "setpgid", nr: unix.SYS_SETPGID, want: unix.EPERM})
	for _, f := range []struct {
		name string
		flag uintptr
	}{
		{"newns", unix.CLONE_NEWNS}, {"newcgroup", unix.CLONE_NEWCGROUP}, {"newuts", unix.CLONE_NEWUTS},
		{"newipc", unix.CLONE_NEWIPC}, {"newuser", unix.CLONE_NEWUSER}, {"newpid", unix.CLONE_NEWPID},
		{"newnet", unix.CLONE_NEWNET},
	} {
		tries = append(tries,
			try{name: "clone-" + f.name, nr: unix.SYS_CLONE, args: []uintptr{f.flag | uintptr(unix.SIGCHLD)}, want: unix.EPERM},
			try{name: "unshare-" + f.name, nr: unix.SYS_UNSHARE, args: []uintptr{f.flag}, want: unix.EPERM})
	}
	return append(tries,
		try{name: "clone-parent", nr: unix.SYS_CLONE, args: []uintptr{unix.CLONE_PARENT | uintptr(unix.SIGCHLD)}, want: parent},
		try{name: "clone3", nr: unix.SYS_CLONE3, want: unix.ENOSYS},
		try{name: "personality-no-aslr", nr: unix.SYS_PERSONALITY, args: []uintptr{0x0040000}, want: unix.EPERM},
		try{name: "personality-exec", nr: unix.SYS_PERSONALITY, args: []uintptr{0x0400000}, want: unix.EPERM},
		// A query, which the filter allows; the canary's stdin is not a
		// terminal, so TIOCSTI would fail with ENOTTY unfiltered.
		try{name: "personality-query", nr: unix.SYS_PERSONALITY, args: []uintptr{0xffffffff}, want: 0},
		try{name: "tiocsti", nr: unix.SYS_IOCTL, args: []uintptr{0, unix.TIOCSTI, 0}, want: unix.EPERM},
		try{name: "ioctl-other", nr: unix.SYS_IOCTL, args: []uintptr{0, unix.TIOCGPGRP, 0}, want: unix.ENOTTY},
		try{name: "getpid", nr: unix.SYS_GETPID, want: 0},
	)
}

// TestStageDenials makes every refused call from inside a stage, through
// the resident helper and the one-shot one.
func TestStageDenials(t *testing.T) {
	if auditArch == 0 {
		t.Skip("no filter for this architecture")
	}
	if ABI() == 0 {
		skipUnlessCI(t, "no landlock")
	}
	for _, oneShot := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneshot=%v", oneShot), func(t *testing.T) { runCanary(t, stageTries(oneShot), oneShot) })
	}
}
