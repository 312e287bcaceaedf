package sandbox

// Stage cgroups: a process limit that holds for root, and a way to kill
// every process of a stage that needs no process group.
//
// RLIMIT_NPROC, the profile's "procs", is ignored for root (and for
// CAP_SYS_RESOURCE), so a fork bomb in a stage of a daemon running as
// root would take the machine. The pids controller counts for everyone:
// each stage gets a cgroup of its own, with pids.max set to the
// profile's procs, that the daemon puts it in while it waits at the gate,
// before it can fork. Where the unified hierarchy (cgroup v2) has the
// pids controller it is used, otherwise the v1 pids hierarchy (hybrid
// systems, like the CI machine). Stage cgroups live in one directory per
// daemon, "ollie-PID" beside the daemon's own cgroup; the resident helper
// is told its name and, when the daemon dies, kills everything in it.
//
// Where no pids cgroup can be made (not root and no delegation, or a
// read-only /sys/fs/cgroup), stages run without one: RLIMIT_NPROC still
// holds for an ordinary user, and ProcessLimit says what is enforced.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/mountinfo"
)

// A cgroupRoot is the daemon's directory of stage cgroups.
type cgroupRoot struct {
	dir string
	v2  bool
	n   atomic.Int64 // names the next stage's cgroup
	// spare are empty stage cgroups kept for the next stages: making and
	// removing one costs ~130 µs a stage, reusing one a write.
	spare chan string
}

const spareCgroups = 16

var stageCgroups = sync.OnceValues(openCgroupRoot)

// ProcessLimit says how a profile's procs limit is enforced: by a pids
// cgroup per stage, or, when none can be made, by RLIMIT_NPROC alone
// (which root ignores), with the reason.
func ProcessLimit() string {
	r, err := stageCgroups()
	if err != nil {
		return "rlimit only (" + err.Error() + ")"
	}
	if r.v2 {
		return "cgroup v2 pids.max in " + r.dir
	}
	return "cgroup v1 pids.max in " + r.dir
}

// openCgroupRoot makes the daemon's directory of stage cgroups, trying
// the unified hierarchy first.
func openCgroupRoot() (*cgroupRoot, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	name := "ollie-" + strconv.Itoa(os.Getpid())
	var why []string
	for _, m := range mounts {
		dir := filepath.Join(m.dir, name)
		sweep(m.dir)
		err := os.Mkdir(dir, 0o755)
		if err == nil && m.v2 {
			// The parent must hand the controller down to us, and we to
			// the stages; the first fails where the parent holds
			// processes of its own (the "no internal processes" rule).
			err = writeFile(filepath.Join(m.dir, "cgroup.subtree_control"), "+pids")
			if err == nil {
				err = writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+pids")
			}
			if err != nil {
				os.Remove(dir)
			}
		}
		if err == nil {
			return &cgroupRoot{dir: dir, v2: m.v2, spare: make(chan string, spareCgroups)}, nil
		}
		why = append(why, err.Error())
	}
	if len(why) == 0 {
		return nil, fmt.Errorf("no pids cgroup controller")
	}
	return nil, fmt.Errorf("no pids cgroup: %s", strings.Join(why, "; "))
}

type cgroupMount struct {
	dir string // the daemon's own cgroup in this hierarchy
	v2  bool
}

// cgroupMounts finds the daemon's own cgroup in each hierarchy that has
// the pids controller: the v2 one first.
func cgroupMounts() ([]cgroupMount, error) {
	own := map[string]string{} // controller ("" for v2) -> path
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				own[c] = f[2]
			}
		}
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return nil, err
	}
	var v1, v2 []cgroupMount
	for _, m := range ms {
		switch {
		case m.FSType == "cgroup2":
			dir := filepath.Join(m.Point, strings.TrimPrefix(own[""], m.Root))
			if c, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); hasWord(string(c), "pids") {
				v2 = append(v2, cgroupMount{dir, true})
			}
		case m.FSType == "cgroup" && hasWord(strings.ReplaceAll(m.SuperOpts, ",", " "), "pids"):
			v1 = append(v1, cgroupMount{filepath.Join(m.Point, strings.TrimPrefix(own["pids"], m.Root)), false})
		}
	}
	return append(v2, v1...), nil
}

func hasWord(s, w string) bool {
	for _, x := range strings.Fields(s) {
		if x == w {
			return true
		}
	}
	return false
}

// sweep removes the stage cgroups of daemons that are gone, with
// whatever they left running.
func sweep(parent string) {
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "ollie-")
		pid, err := strconv.Atoi(n)
		if !ok || err != nil || !e.IsDir() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		removeTree(filepath.Join(parent, e.Name()))
	}
}

// A stageCgroup is where one stage goes: its own cgroup, dir, and the
// port guard's cgroup, guard (netguard.go), unless dir is inside it;
// either may be "".
type stageCgroup struct {
	dir   string
	v2    bool
	guard string
	root  *cgroupRoot // nil in the one-shot helper
	// placed: the program is born in dir (serve.go), not moved there;
	// procs is then written to dir's pids.max at the gate.
	placed bool
	procs  string
}

// newStageCgroup makes a cgroup for one stage allowing procs processes
// (0: no limit of its own), within the port guard's cgroup guard if that
// is not "". It returns nil where there are neither.
func newStageCgroup(procs int, guard string) (*stageCgroup, error) {
	r, err := stageCgroups()
	if err != nil {
		if guard == "" {
			return nil, nil
		}
		return &stageCgroup{guard: guard}, nil
	}
	c := &stageCgroup{v2: r.v2, root: r}
	if guard != "" && guard != r.dir {
		c.guard = guard
	}
	select {
	case c.dir = <-r.spare:
	default:
		if c.dir, err = r.newDir(); err != nil {
			return nil, fmt.Errorf("cgroup: %v", err)
		}
	}
	c.procs = "max"
	if procs > 0 {
		c.procs = strconv.Itoa(procs)
	}
	if err := writeFile(filepath.Join(c.dir, "pids.max"), c.procs); err != nil {
		c.remove()
		return nil, fmt.Errorf("cgroup: %v", err)
	}
	return c, nil
}

// takePlaced makes dir, where the resident helper's thread waited for the
// request, the stage's cgroup in place of the one made for it, which is
// kept for another stage. dir must be one of the helper's in the
// daemon's own directory of v1 stage cgroups; anything else is ignored,
// and the program is moved at the gate as before.
//
// Its pids.max stays "max" until the program is at the gate (add): the
// thread that forks it is in dir too until it ends, and counts. For a
// moment after the program starts it may still be there, and the stage
// may then start one process fewer than its limit, never one more.
func (c *stageCgroup) takePlaced(dir string) {
	if c == nil || c.root == nil || c.v2 || c.dir == "" || filepath.Dir(dir) != c.root.dir ||
		!strings.HasPrefix(filepath.Base(dir), placedPrefix) {
		return
	}
	old := c.dir
	c.dir, c.placed = dir, true
	c.root.keep(old)
}

// newDir makes a stage cgroup of a name not used before.
func (r *cgroupRoot) newDir() (string, error) {
	dir := filepath.Join(r.dir, "s"+strconv.FormatInt(r.n.Add(1), 10))
	return dir, retry(func() error { return os.Mkdir(dir, 0o755) })
}

// warm makes n empty stage cgroups for the first stages, which would
// otherwise each make their own (the daemon calls it at start).
func (r *cgroupRoot) warm(n int) {
	for range n {
		dir, err := r.newDir()
		if err != nil {
			return
		}
		r.keep(dir)
	}
}

// keep keeps the empty cgroup dir for a later stage, or removes it when
// enough are kept. The removal is not waited for: a cgroup whose last
// task has just exited stays busy (EBUSY) until the kernel has released
// that task, after an RCU grace period (the helper's thread that forked
// a placed stage is such a task), and no stage should wait for that.
func (r *cgroupRoot) keep(dir string) {
	select {
	case r.spare <- dir:
	default:
		go rmdir(dir)
	}
}

// add moves process pid (0: the caller) into the cgroups.
func (c *stageCgroup) add(pid int) error {
	if c == nil {
		return nil
	}
	if c.placed {
		if err := writeFile(filepath.Join(c.dir, "pids.max"), c.procs); err != nil {
			return fmt.Errorf("cgroup: %v", err)
		}
	}
	for _, d := range []string{c.guard, c.dir} {
		if d == "" || d == c.dir && c.placed {
			continue
		}
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup: %v", err)
		}
	}
	return nil
}

// remove kills whatever is left in the stage's own cgroup and removes it,
// or keeps it for another stage once it is empty.
func (c *stageCgroup) remove() {
	if c == nil || c.dir == "" {
		return
	}
	if killCgroup(c.dir, c.v2) && c.root != nil {
		c.root.keep(c.dir)
		return
	}
	rmdir(c.dir)
}

// removeTree removes a daemon's directory of stage cgroups and kills
// every process in it: what the resident helper does when the daemon
// dies.
func removeTree(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			sub := filepath.Join(dir, e.Name())
			killCgroup(sub, false)
			rmdir(sub)
		}
	}
	killCgroup(dir, true)
	rmdir(dir)
}

// killCgroup kills every process in cgroup dir. cgroup.kill (v2) does it
// at once; otherwise the members are killed one by one until none is
// left, each through a pidfd taken before checking that the pid is still
// a member, so that a reused pid is never signalled. It reports whether
// the cgroup was found empty at once.
func killCgroup(dir string, v2 bool) (empty bool) {
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil && len(b) == 0 {
		return true
	}
	if v2 && writeFile(filepath.Join(dir, "cgroup.kill"), "1") == nil {
		return false
	}
	rel := "/" + filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
	for range 1000 {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		pids := strings.Fields(string(b))
		if err != nil || len(pids) == 0 {
			return false
		}
		for _, p := range pids {
			pid, _ := strconv.Atoi(p)
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if cg, _ := os.ReadFile("/proc/" + p + "/cgroup"); strings.Contains(string(cg), rel+"\n") {
				unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
	}
	return false
}

// rmdir removes a cgroup; processes killed a moment ago may still be
// leaving it, so EBUSY is tried again for a while.
func rmdir(dir string) {
	for range 1000 {
		err := unix.Rmdir(dir)
		if err != unix.EBUSY && err != unix.EINTR {
			return
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
}

func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
