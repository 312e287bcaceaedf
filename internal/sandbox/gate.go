package sandbox

// The gate: how a program forked by the resident helper gets its process
// group and resource limits before it can run.
//
// Both are per process and must be in place before the program's first
// instruction, yet syscall.ForkExec runs no code of ours between fork and
// exec, and the forking thread's seccomp filter already refuses setpgid.
// So the thread installs its filter with one exception: setpgid(0,
// gatePgid), an id no process group can have, goes to a seccomp listener
// (SECCOMP_RET_USER_NOTIF) instead of failing. The helper forks with
// Setpgid and Pgid gatePgid, which makes that call the child's very first
// one, and CLONE_PARENT, which makes the child the daemon's. The daemon
// holds the listener: when the call arrives, the child is stopped in it,
// before exec; the daemon makes it the leader of a new process group
// (setpgid on its own child before exec is allowed), lowers its limits
// with prlimit, and answers "done" without running the call. Any later
// setpgid(_, gatePgid) finds the listener closed and fails with ENOSYS;
// every other setpgid and setsid fails with EPERM, as before.
//
// The fork itself is a clone with CLONE_PARENT, which the filter refuses
// to stages (it would give the daemon children it knows nothing of); with
// the gate it comes to the listener too, and the daemon lets the first
// one through, before the program exists. Later ones fail with ENOSYS.
//
// The daemon learns the program's pid from the kernel before the program
// runs, and the program is its child: it never depends on the helper to
// find, wait for or kill a stage, and a helper that dies leaves nothing
// behind. The listener also hangs up once no thread or process is left
// that could call the gate, so the daemon never waits for a program that
// will not come.

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
)

// seccompNotif and seccompNotifResp are struct seccomp_notif and
// struct seccomp_notif_resp of <linux/seccomp.h>.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  struct {
		Nr   int32
		Arch uint32
		IP   uint64
		Args [6]uint64
	}
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifySizes checks that the kernel's notification structures are the
// ones above: a larger one would be written past the end of ours.
var notifySizes = sync.OnceValue(func() error {
	var sz struct{ notif, resp, data uint16 }
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sz))); e != 0 {
		return fmt.Errorf("seccomp notification sizes: %v", e)
	}
	if sz.notif != uint16(unsafe.Sizeof(seccompNotif{})) || sz.resp != uint16(unsafe.Sizeof(seccompNotifResp{})) {
		return fmt.Errorf("seccomp notification sizes %d/%d, want %d/%d", sz.notif, sz.resp,
			unsafe.Sizeof(seccompNotif{}), unsafe.Sizeof(seccompNotifResp{}))
	}
	return nil
})

// pass waits at the gate behind listener l and lets one program through:
// it returns the program's pid once it is the leader of its own process
// group with limits lim, in cgroup cg (nil for none), or with setup the
// reason it was refused instead.
// pid 0 means the listener hung up: no program passed or ever will.
// Within limit, a program reaches the gate or the listener hangs up; past
// it pass returns timedOut so that the caller can make sure of it.
// onAdmit, if set, learns the program's process group before it runs.
func pass(l *os.File, lim config.Limits, cg *stageCgroup, limit int, onAdmit func(int)) (pid int, setup error, timedOut bool) {
	fd := int(l.Fd())
	forked := false
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, limit)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, fmt.Errorf("gate: poll: %v", err), false
		case n == 0:
			return 0, nil, true
		case fds[0].Revents&unix.POLLIN == 0:
			return 0, nil, false // hung up
		}
		var req seccompNotif
		if _, e := rawRetry(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); e != 0 {
			// ENOENT: the caller died before we read its call; the
			// listener will tell whether anyone is left.
			continue
		}
		resp := seccompNotifResp{ID: req.ID}
		switch {
		case req.Data.Arch == auditArch && req.Data.Nr == unix.SYS_CLONE && !forked:
			// The helper's thread forking the program, the one clone
			// with CLONE_PARENT that goes through; nothing else runs under
			// the filter yet.
			forked = true
			resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
			notifSend(fd, &resp)
			continue
		case req.Data.Arch != auditArch || req.Data.Nr != unix.SYS_SETPGID || uint32(req.Data.Args[1]) != gatePgid || !forked:
			// Nothing else comes here; refuse whatever it is and keep
			// waiting for the program.
			resp.Error = -int32(unix.EPERM)
			notifSend(fd, &resp)
			continue
		}
		pid = int(req.Pid)
		setup = admit(pid, lim, cg)
		if setup != nil {
			resp.Error = -int32(unix.EPERM)
		} else if onAdmit != nil {
			onAdmit(pid)
		}
		if e := notifSend(fd, &resp); e != 0 && setup == nil {
			// Killed while we were busy with it: it will not exec.
			setup = fmt.Errorf("gate: the program died before it started")
		}
		return pid, setup, false
	}
}

// admit makes the stopped child pid the leader of a new process group,
// lowers its resource limits and puts it in its cgroup: all before it
// can run, let alone fork.
func admit(pid int, lim config.Limits, cg *stageCgroup) error {
	if err := retry(func() error { return unix.Setpgid(pid, pid) }); err != nil {
		return fmt.Errorf("gate: setpgid: %v", err)
	}
	if err := setLimits(pid, lim); err != nil {
		return err
	}
	if err := cg.add(pid); err != nil {
		return err
	}
	return setLimit(pid, unix.RLIMIT_NPROC, uint64(lim.Procs))
}

// notifSend answers a notification. The ioctl takes the listener's lock
// interruptibly, so a signal can make it fail with EINTR having sent
// nothing; unanswered, the program would wait at the gate for ever.
func notifSend(fd int, resp *seccompNotifResp) unix.Errno {
	_, e := rawRetry(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(resp)))
	return e
}
