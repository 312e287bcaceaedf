package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/mountinfo"
)

// A ruleset that cannot be reused (a new session's: its cwd and tmp/ are
// among its paths) was built by go-landlock, which opens each of its some
// 250 paths, adds its rule and closes it again: 1.0 ms of a new session's
// first stage of 1.7 ms in the cache's miss path, under load. Nearly all
// of those paths are the carved system, the same for every session. So
// a ruleset is built here instead, from descriptors kept open: the
// default profile's base (the system and the home carved around
// secrets) is held, each path opened O_PATH once (HoldBase), and a build
// adds the rule for a path from the held descriptor when the path still
// names the file held: the cache's miss path has just looked at every
// path (pathIDs), and a rule binds to the inode the descriptor refers to,
// so the rule is the one a fresh open would have given. A build opens the
// others as go-landlock did; it replaces a held descriptor whose path
// now names another file, and drops one whose path is gone.
//
// What is held is chosen so that holding it surprises no one:
//   - only paths on the system's own mounts: a descriptor keeps its
//     mount busy, and a session's tmp/ (a tmpfs unmounted with the
//     session) or a removable disk must stay unmountable;
//   - no file in the home: a descriptor of a deleted file keeps its
//     blocks, and a big file a user deletes must give its space back
//     (directories, and the system's files, are small);
//   - nothing a session adds (its cwd, its tmp/), which would only grow.
//
// Nothing is held before HoldBase: holding some 250 descriptors grows
// the daemon's descriptor table from 64 entries to 512, and the kernel
// waits for an RCU grace period at each growth of a table its threads
// share (5 to 10 ms here; the first stage of the daemon took 18 to 34 ms
// instead of 4 when its build grew it three times). HoldBase grows it
// once, off any request's path.

// maxHeld bounds the descriptors held: at most a quarter of the
// descriptors the daemon may open, and 4,096.
var maxHeld = sync.OnceValue(func() int {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return int(min(rl.Cur/4, 4096))
})

// heldPath is a held descriptor and the file it was opened on.
type heldPath struct {
	fd int
	id fileID
}

var held struct {
	mu sync.RWMutex // read: descriptors borrowed for a build; write: a change of m
	m  map[string]heldPath
}

// fdTableSize is the size the descriptor table is grown to at once.
const fdTableSize = 1024

// HoldBase holds the paths of p's base (the system and the home carved
// around secrets, for a daemon whose home and private paths are these)
// that may be held, after growing the descriptor table to fdTableSize
// entries, and keeps a look at them (lookAt). The daemon calls it once, a
// moment after it starts.
func HoldBase(p config.Profile, home string, private []string) {
	if ABI() < minReferABI {
		return
	}
	if fd, err := unix.Open("/", heldOpenFlags, 0); err == nil {
		if big, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, fdTableSize-1); err == nil {
			unix.Close(big)
		}
		unix.Close(fd)
	}
	b, err := cachedBase(p, Paths{Home: home, Private: private})
	ms, merr := mountinfo.Read()
	if err != nil || merr != nil {
		return
	}
	files := b.files
	if home != "" {
		home = resolve(home) // as the base has it
		files = slices.DeleteFunc(slices.Clone(files), func(f string) bool { return within(f, home) })
	}
	paths := onSystemMounts(slices.Concat(b.dirs, files), ms)
	holdPaths(paths)
	// And what they name is looked at once, for the first session's build
	// to take from (lookAt): a daemon's first build had no look before it,
	// and stat'ed and resolved all of them (1.5 to 2 ms of its first call).
	lookAt(paths)
}

// holdPaths opens and holds paths, those that may be held (holdable).
func holdPaths(paths []string) {
	fresh := map[string]heldPath{}
	for _, path := range paths {
		fd, err := retry1(func() (int, error) { return unix.Open(path, heldOpenFlags, 0) })
		if err != nil {
			continue
		}
		keepFresh(fresh, path, fd)
	}
	hold(fresh, true, nil)
}

// keepFresh puts fd, opened now for path, in fresh if it may be held
// (holdable), in place of one opened before for the same path; it closes
// what it does not keep.
func keepFresh(fresh map[string]heldPath, path string, fd int) {
	h, ok := holdable(fd)
	if !ok {
		unix.Close(fd)
		return
	}
	if old, dup := fresh[path]; dup {
		unix.Close(old.fd)
	}
	fresh[path] = h
}

// systemMounts are the mount points of the file systems whose paths may
// be held, where they are mount points.
var systemMounts = []string{"/", "/usr", "/etc", "/proc", "/sys", "/dev"}

// systemDevs are the devices of systemMounts.
var systemDevs = sync.OnceValue(func() map[uint64]bool {
	devs := map[uint64]bool{}
	for _, d := range systemMounts {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil {
			devs[st.Dev] = true
		}
	}
	return devs
})

// abiConfigs are go-landlock's configurations of each Landlock ABI, in
// order: what it handles on a kernel of that ABI.
var abiConfigs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// handledFS is the file system access c handles on this kernel, as
// go-landlock downgrades it in best effort mode.
func handledFS(c landlock.Config) landlock.AccessFSSet {
	v := min(ABI(), len(abiConfigs))
	if v <= 0 {
		return 0
	}
	return c.HandledAccessFS & abiConfigs[v-1].HandledAccessFS
}

// The access of each kind of path, as go-landlock's RODirs, ROFiles,
// RWDirs (with refer) and RWFiles grant it.
const (
	accessRead     = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	accessWrite    = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate
	accessFileOnly = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile
	accessROFiles  = accessRead & accessFileOnly
	accessRWDirs   = accessRead | accessWrite | ll.AccessFSRefer
	accessRWFiles  = (accessRead | accessWrite) & accessFileOnly
	minReferABI    = 2
	heldOpenFlags  = unix.O_PATH | unix.O_CLOEXEC
)

// buildRuleset builds the ruleset of p under c. ids are what its paths
// (allPaths order) named when last looked at, nil if not known: then every
// path is opened now.
func buildRuleset(c landlock.Config, p *Policy, ids []fileID) (int, uint32, error) {
	if ABI() < minReferABI {
		// go-landlock then restricts nothing for a policy with a
		// writable directory (refer cannot be handled): its way.
		return c.NewRulesetFD(p.rules()...)
	}
	// The ruleset, its handled access and the network rules are
	// go-landlock's; only the file system rules are added here.
	fd, flags, err := c.NewRulesetFD(p.netRules()...)
	if err != nil || fd < 0 {
		return fd, flags, err
	}
	handled := handledFS(c)
	var (
		fresh map[string]heldPath // opened now for a held path that names another file
		gone  []string            // held paths that are gone
	)
	i := 0
	add := func(paths []string, access landlock.AccessFSSet) error {
		access &= handled
		for _, path := range paths {
			var id fileID
			if ids != nil {
				id = ids[i]
			}
			i++
			if access == 0 {
				continue // go-landlock adds no rule without access either
			}
			pfd, own, isHeld, err := heldFD(path, id)
			if errors.Is(err, unix.ENOENT) {
				if isHeld {
					gone = append(gone, path)
				}
				continue // IgnoreIfMissing
			}
			if err != nil {
				return fmt.Errorf("open %s: %w", path, err)
			}
			attr := ll.PathBeneathAttr{ParentFd: pfd, AllowedAccess: uint64(access)}
			err = retry(func() error { return ll.LandlockAddPathBeneathRule(fd, &attr, 0) })
			switch {
			case own && isHeld: // the held one is on another file
				if fresh == nil {
					fresh = map[string]heldPath{}
				}
				keepFresh(fresh, path, pfd)
			case own:
				unix.Close(pfd)
			}
			if err != nil {
				return fmt.Errorf("landlock_add_rule %s: %w", path, err)
			}
		}
		return nil
	}
	held.mu.RLock()
	err = add(p.RODirs, accessRead)
	if err == nil {
		err = add(p.ROFiles, accessROFiles)
	}
	if err == nil {
		err = add(p.RWDirs, accessRWDirs)
	}
	if err == nil {
		err = add(p.RWFiles, accessRWFiles)
	}
	held.mu.RUnlock()
	hold(fresh, false, gone)
	if err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, flags, nil
}

// onSystemMounts are the paths that lie on one of systemMounts as
// mounted in ms, not under any other mount. The others are not even
// looked at: a base has the mounts under the home too (the tree's own
// FUSE mount, a user's), and a look there can wait on its server, which
// for the tree is the daemon itself, as it is stopped or killed.
func onSystemMounts(paths []string, ms []mountinfo.Mount) []string {
	points := make([]string, len(ms))
	for i, m := range ms {
		points[i] = m.Point
	}
	var out []string
	for _, path := range paths {
		if slices.Contains(systemMounts, mountOf(path, points)) {
			out = append(out, path)
		}
	}
	return out
}

// heldFD returns a descriptor of path for a rule: the held one if it is
// on id (known and existing), else one opened now, which the caller owns;
// and whether path is held. The caller holds held.mu for reading.
func heldFD(path string, id fileID) (fd int, own, isHeld bool, err error) {
	h, isHeld := held.m[path]
	if isHeld && id.exists && h.id == id {
		return h.fd, false, true, nil
	}
	fd, err = retry1(func() (int, error) { return unix.Open(path, heldOpenFlags, 0) })
	return fd, err == nil, isHeld, err
}

// holdable says whether a descriptor opened now may be held, and what
// it is on.
func holdable(fd int) (heldPath, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !systemDevs()[st.Dev] {
		return heldPath{}, false
	}
	return heldPath{fd: fd, id: fileID{dev: st.Dev, ino: st.Ino, exists: true}}, true
}

// hold keeps the descriptors of fresh, each in place of the one held for
// its path (closed); a path not held yet only if add is set, and within
// maxHeld. The descriptors not kept are closed, and so are those of the
// paths gone.
func hold(fresh map[string]heldPath, add bool, gone []string) {
	if len(fresh) == 0 && len(gone) == 0 {
		return
	}
	var drop []int
	held.mu.Lock()
	if held.m == nil {
		held.m = map[string]heldPath{}
	}
	for _, path := range gone {
		if old, ok := held.m[path]; ok {
			drop = append(drop, old.fd)
			delete(held.m, path)
		}
	}
	for path, h := range fresh {
		old, ok := held.m[path]
		switch {
		case ok:
			drop = append(drop, old.fd)
		case !add || len(held.m) >= maxHeld():
			drop = append(drop, h.fd)
			continue
		}
		held.m[path] = h
	}
	held.mu.Unlock()
	for _, fd := range drop {
		unix.Close(fd)
	}
}
