package sandbox

// The port guard: TCP ports no stage may connect to or bind, whatever its
// profile (config.Config.StagePorts: the daemon's own listeners, the
// ports of local backends).
//
// Landlock's network rules are allow-lists of single ports: denying a few
// ports means allowing the 65,000 others, twice (connect and bind). That
// was measured on kernel 6.18: building the ruleset takes 80 ms, and
// every landlock_restrict_self copies the rules again, 18 to 55 ms per
// stage, even for a per-stage domain nested over a shared one. Seccomp
// cannot see a sockaddr, which is in memory; a supervisor that reads it
// and performs the call itself costs a round trip per connect and still
// has to replay every call faithfully.
//
// So the guard is a cgroup eBPF program (BPF_PROG_TYPE_CGROUP_SOCK_ADDR)
// on the connect and bind hooks of IPv4 and IPv6, attached once to the
// daemon's own cgroup of stages. The kernel runs it on its own copy of
// the address, after the copy from the stage (no TOCTOU), on every way
// to connect (connect, TCP fast open's sendto) and bind, at the cost of a
// few instructions per call; a stage pays nothing at start but a write to
// cgroup.procs at the gate. Denied calls fail with EPERM.
//
// It needs cgroup v2 and the right to load BPF (root, or CAP_BPF with a
// delegated cgroup). Without it, Prepare falls back where it can: binding
// is narrowed with Landlock to ephemeral ports (port 0), and a profile
// with the network on is refused while connect ports are denied.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/mountinfo"
)

// Guard is the ports a policy keeps stages from.
type Guard struct {
	Connect []uint16 // neither connect nor bind
	Bind    []uint16 // no bind
}

func (g Guard) empty() bool { return len(g.Connect) == 0 && len(g.Bind) == 0 }

// bindDenied is every port a stage may not bind.
func (g Guard) bindDenied() []uint16 {
	p := slices.Concat(g.Connect, g.Bind)
	slices.Sort(p)
	return slices.Compact(p)
}

// guardCgroup is the daemon's guarded cgroup: the programs are attached
// to it and every stage is put in it. One set of ports per daemon.
var guardCgroup struct {
	mu  sync.Mutex
	g   *Guard
	dir string
	err error
}

// WarmGuard sets up the port guard for g ahead of the first stage that
// needs it: its cgroup and programs took 0.5 ms of the Prepare of a
// daemon's first stage. An error is kept for that stage to report, as if
// it had met it.
func WarmGuard(g Guard) {
	if !g.empty() {
		guardDir(g)
	}
}

// guardDir returns the guarded cgroup for g, setting it up on first use.
func guardDir(g Guard) (string, error) {
	guardCgroup.mu.Lock()
	defer guardCgroup.mu.Unlock()
	if guardCgroup.g != nil {
		if !slices.Equal(g.Connect, guardCgroup.g.Connect) || !slices.Equal(g.Bind, guardCgroup.g.Bind) {
			return "", fmt.Errorf("the denied ports changed; restart the daemon to apply them")
		}
		return guardCgroup.dir, guardCgroup.err
	}
	guardCgroup.g = &g
	guardCgroup.dir, guardCgroup.err = newGuard(g)
	return guardCgroup.dir, guardCgroup.err
}

// newGuard makes the guarded cgroup and attaches the programs: the
// daemon's directory of stage cgroups when that is in cgroup v2, a
// directory of its own in the v2 hierarchy otherwise.
func newGuard(g Guard) (string, error) {
	dir := ""
	if r, err := stageCgroups(); err == nil && r.v2 {
		dir = r.dir
	} else {
		parent, err := ownV2Cgroup()
		if err != nil {
			return "", err
		}
		sweep(parent)
		dir = filepath.Join(parent, "ollie-"+strconv.Itoa(os.Getpid()))
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return "", fmt.Errorf("port guard: %v", err)
		}
	}
	cg, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("port guard: %v", err)
	}
	defer unix.Close(cg)
	for _, h := range []struct {
		attach uint32
		deny   []uint16
	}{
		{unix.BPF_CGROUP_INET4_CONNECT, g.Connect},
		{unix.BPF_CGROUP_INET6_CONNECT, g.Connect},
		{unix.BPF_CGROUP_INET4_BIND, g.bindDenied()},
		{unix.BPF_CGROUP_INET6_BIND, g.bindDenied()},
	} {
		if err := attachPortFilter(cg, h.attach, h.deny); err != nil {
			return "", fmt.Errorf("port guard: %v", err)
		}
	}
	return dir, nil
}

// ownV2Cgroup is the daemon's own cgroup in the unified hierarchy.
func ownV2Cgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	own := ""
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			own = p
		}
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if own != "" && m.FSType == "cgroup2" {
			return filepath.Join(m.Point, strings.TrimPrefix(own, m.Root)), nil
		}
	}
	return "", fmt.Errorf("port guard: no cgroup v2 hierarchy")
}

// bpfInsn is struct bpf_insn.
type bpfInsn struct {
	code uint8
	regs uint8 // dst in the low nibble, src in the high one
	off  int16
	imm  int32
}

// portFilter is a program that refuses (returns 0) a call whose port is
// in deny and allows (returns 1) any other. struct bpf_sock_addr has the
// port at offset 24, in network byte order in its low 16 bits.
func portFilter(deny []uint16) []bpfInsn {
	const (
		ldxW  = unix.BPF_LDX | unix.BPF_MEM | unix.BPF_W
		jeqK  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		movK  = unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K
		exit  = unix.BPF_JMP | unix.BPF_EXIT
		rPort = 2
	)
	p := []bpfInsn{{code: ldxW, regs: 1<<4 | rPort, off: 24}}
	for i, port := range deny {
		// Jump over the other compares and the two instructions of "allow".
		skip := len(deny) - 1 - i + 2
		p = append(p, bpfInsn{code: jeqK, regs: rPort, off: int16(skip), imm: int32(port>>8 | port<<8)})
	}
	return append(p,
		bpfInsn{code: movK, imm: 1}, bpfInsn{code: exit},
		bpfInsn{code: movK, imm: 0}, bpfInsn{code: exit})
}

// attachPortFilter loads portFilter(deny) for hook attach and attaches it
// to cgroup cg, which keeps it; the program's descriptor is closed.
func attachPortFilter(cg int, attach uint32, deny []uint16) error {
	prog := portFilter(deny)
	license := []byte("GPL\x00")
	var load struct {
		progType, insnCnt   uint32
		insns, license      uint64
		logLevel, logSize   uint32
		logBuf              uint64
		kernVersion, flags  uint32
		name                [16]byte
		ifindex, attachType uint32
	}
	load.progType = unix.BPF_PROG_TYPE_CGROUP_SOCK_ADDR
	load.insnCnt = uint32(len(prog))
	load.insns = uint64(uintptr(unsafe.Pointer(&prog[0])))
	load.license = uint64(uintptr(unsafe.Pointer(&license[0])))
	load.attachType = attach
	copy(load.name[:], "ollie_ports")
	fd, e := rawRetry(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&load)), unsafe.Sizeof(load))
	if e != 0 {
		return fmt.Errorf("bpf prog load: %v", e)
	}
	defer unix.Close(int(fd))
	att := struct{ target, prog, attachType, flags, replace uint32 }{uint32(cg), uint32(fd), attach, 0, 0}
	if _, e := rawRetry(unix.SYS_BPF, unix.BPF_PROG_ATTACH, uintptr(unsafe.Pointer(&att)), unsafe.Sizeof(att)); e != 0 {
		return fmt.Errorf("bpf prog attach: %v", e)
	}
	return nil
}
