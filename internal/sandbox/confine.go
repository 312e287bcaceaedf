package sandbox

import (
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
)

// confine applies s to the calling thread and, for limits, the process:
// the one-shot helper's way, which execs the program itself afterwards.
func confine(s spec) error {
	if s.Mode == Elevated {
		return nil
	}
	if err := setLimits(0, s.Limits); err != nil {
		return err
	}
	if err := confineThread(s, rulesetFD); err != nil {
		return err
	}
	if err := installSeccomp(s.Deny); err != nil {
		return err
	}
	// Last, so that the Go runtime can still start threads above even
	// when the user is near the limit.
	return setLimit(0, unix.RLIMIT_NPROC, uint64(s.Limits.Procs))
}

// confineThread sets no-new-privs, the Landlock ruleset (Mode Landlock)
// and an empty capability set on the calling thread. All three are per
// thread and inherited by whatever the thread forks or execs, so the
// thread must be locked and never handed back to the Go scheduler.
func confineThread(s spec, ruleset int) error {
	if err := retry(func() error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }); err != nil {
		return fmt.Errorf("no-new-privs: %v", err)
	}
	if s.Mode == Landlock {
		if err := restrict(s, ruleset); err != nil {
			return err
		}
	}
	return dropCaps()
}

// restrict enforces the Landlock ruleset on the calling thread, which
// must have no-new-privs.
func restrict(s spec, ruleset int) error {
	// TSYNC would confine every thread of the process: fine for the
	// one-shot helper, fatal for the resident one.
	if s.Flags&ll.FlagRestrictSelfTSync != 0 {
		return fmt.Errorf("landlock restrict: thread sync requested")
	}
	if err := retry(func() error { return ll.LandlockRestrictSelf(ruleset, s.Flags) }); err != nil {
		return fmt.Errorf("landlock restrict: %v", err)
	}
	return nil
}

// limitList is l as (resource, value) pairs; 0 leaves a resource alone,
// except core dumps, which are always off.
func limitList(l config.Limits) [6]struct {
	res int
	v   uint64
} {
	return [6]struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_AS, uint64(l.MemoryMB) << 20},
		{unix.RLIMIT_FSIZE, uint64(l.FileMB) << 20},
		{unix.RLIMIT_NOFILE, uint64(l.Files)},
		{unix.RLIMIT_CPU, uint64(l.CPUSecs)},
		{unix.RLIMIT_NPROC, uint64(l.Procs)},
	}
}

// setLimits applies l to process pid (0: this one), all but the process
// count, which the one-shot helper sets last.
func setLimits(pid int, l config.Limits) error {
	for _, r := range limitList(l) {
		if r.res == unix.RLIMIT_NPROC {
			continue
		}
		if err := setLimit(pid, r.res, r.v); err != nil {
			return err
		}
	}
	return nil
}

// setLimit lowers resource res of process pid (0: this one) to v; 0
// leaves it alone, except for core dumps, which are always off. It
// never raises a hard limit, even for a daemon that could.
func setLimit(pid, res int, v uint64) error {
	if v == 0 && res != unix.RLIMIT_CORE {
		return nil
	}
	var cur unix.Rlimit
	if err := retry(func() error { return unix.Prlimit(pid, res, nil, &cur) }); err != nil {
		return fmt.Errorf("getrlimit %d: %v", res, err)
	}
	if v > cur.Max {
		v = cur.Max
	}
	if err := retry(func() error { return unix.Prlimit(pid, res, &unix.Rlimit{Cur: v, Max: v}, nil) }); err != nil {
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
	if err := retry(func() error { return unix.Capset(&hdr, &data[0]) }); err != nil {
		return fmt.Errorf("capset: %v", err)
	}
	return nil
}
