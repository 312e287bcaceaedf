package sandbox

// The resident helper keeps the mount namespaces it made for protection
// (protect.go) a little while and lets later stages of the same policy
// join them: making one per stage copies the mount table, and the
// kernel's tear-down when the stage exits waits for an RCU grace period,
// which on a loaded machine cost more than the rest of the sandbox.

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// nsTTL is how long a namespace unused is kept (a variable for a test).
var nsTTL = 10 * time.Second

const nsMax = 64 // namespaces kept at most

type keptNS struct {
	fd   int // /proc/thread-self/ns/mnt of the thread that made it
	used time.Time
	refs int // threads joining it now; it is not closed under them
}

var nsCache struct {
	mu    sync.Mutex
	m     map[string]*keptNS
	sweep *time.Timer // drops what outlived nsTTL while no stage comes; nil when none is kept
}

// errStaleNS means that the calling thread joined a kept namespace that
// no longer holds: it cannot go back (the helper's own namespace may
// belong to a user namespace above it), so it must end, and a fresh
// thread make a new namespace.
var errStaleNS = fmt.Errorf("stale mount namespace")

// nsKey identifies what a protection namespace is made of: the paths
// bound, and the writable roots as the daemon sees them (device and
// inode), so that a root mounted or replaced since (a session's new tmp
// quota) gets a namespace that has it. The host's mounts do not
// propagate into a namespace made before them where / is private.
func nsKey(ro, reopen, rw []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q %q", ro, reopen)
	for _, p := range append(append([]string{}, ro...), rw...) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil {
			fmt.Fprintf(&b, " %d:%d", st.Dev, st.Ino)
		} else {
			b.WriteString(" -")
		}
	}
	return b.String()
}

// enterProtected puts the calling thread, locked and still privileged,
// into a namespace where ro are read-only and reopen writable: a kept
// one of the same key if it still holds (and reuse is set), or a new
// one, then kept. It returns errStaleNS for a kept one that no longer
// holds (the user replaced a .git since): the thread must then end.
func enterProtected(key string, ro, reopen []string, reuse bool) error {
	if len(ro) == 0 || key == "" {
		return protect(ro, reopen)
	}
	if k := takeNS(key, reuse); k != nil {
		err := join(k.fd)
		putNS(k)
		if err == nil && stillProtected(ro) {
			return nil
		}
		dropNS(key, k)
		if err == nil {
			return errStaleNS
		}
	}
	if err := protect(ro, reopen); err != nil {
		return err
	}
	fd, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		keepNS(key, fd)
	}
	return nil
}

// join moves the calling thread into mount namespace fd; its file system
// context (root, cwd) must be its own first.
func join(fd int) error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return err
	}
	return unix.Setns(fd, unix.CLONE_NEWNS)
}

// stillProtected reports whether every path of ro is read-only in the
// calling thread's namespace.
func stillProtected(ro []string) bool {
	for _, p := range ro {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
			return false
		}
	}
	return true
}

// takeNS returns the namespace kept under key, if any and if reuse, with
// a reference the caller puts back.
func takeNS(key string, reuse bool) *keptNS {
	nsCache.mu.Lock()
	defer nsCache.mu.Unlock()
	if nsCache.m == nil {
		nsCache.m = map[string]*keptNS{}
	}
	sweepLocked()
	k := nsCache.m[key]
	if k == nil || !reuse {
		return nil
	}
	k.refs++
	k.used = time.Now()
	return k
}

func putNS(k *keptNS) {
	nsCache.mu.Lock()
	defer nsCache.mu.Unlock()
	k.refs--
	closeIfUnused(k)
}

func dropNS(key string, k *keptNS) {
	nsCache.mu.Lock()
	defer nsCache.mu.Unlock()
	if nsCache.m[key] == k {
		forgetLocked(key)
	}
}

// keepNS keeps fd under key, in place of any namespace kept there.
func keepNS(key string, fd int) {
	nsCache.mu.Lock()
	defer nsCache.mu.Unlock()
	if nsCache.m == nil {
		nsCache.m = map[string]*keptNS{}
	}
	if nsCache.m[key] != nil {
		forgetLocked(key)
	}
	sweepLocked()
	if len(nsCache.m) >= nsMax {
		var oldest string
		for kk, k := range nsCache.m {
			if oldest == "" || k.used.Before(nsCache.m[oldest].used) {
				oldest = kk
			}
		}
		forgetLocked(oldest)
	}
	nsCache.m[key] = &keptNS{fd: fd, used: time.Now()}
	if nsCache.sweep == nil {
		nsCache.sweep = time.AfterFunc(nsTTL, sweepLater)
	}
}

// sweepLater drops the namespaces unused past nsTTL though no stage came
// to sweep them. A kept namespace holds a copy of every mount of its
// time, FUSE mounts among them, and a FUSE mount's unmount waits until
// no copy is left: an idle daemon must not keep one forever.
func sweepLater() {
	nsCache.mu.Lock()
	defer nsCache.mu.Unlock()
	sweepLocked()
	if len(nsCache.m) == 0 {
		nsCache.sweep = nil
		return
	}
	next := nsTTL
	for _, k := range nsCache.m {
		if left := nsTTL - time.Since(k.used); left < next {
			next = max(left, time.Millisecond)
		}
	}
	nsCache.sweep.Reset(next)
}

// sweepLocked drops the namespaces unused past nsTTL.
func sweepLocked() {
	for kk, k := range nsCache.m {
		if time.Since(k.used) > nsTTL {
			forgetLocked(kk)
		}
	}
}

func forgetLocked(key string) {
	k := nsCache.m[key]
	delete(nsCache.m, key)
	k.used = time.Time{}
	closeIfUnused(k)
}

// closeIfUnused closes a forgotten namespace (zero used) once no thread
// is joining it; nsCache.mu must be held. The last close tears the
// namespace down, which waits for the kernel: not under the lock, and
// not on a stage's way.
func closeIfUnused(k *keptNS) {
	if k.refs == 0 && k.used.IsZero() && k.fd >= 0 {
		go unix.Close(k.fd)
		k.fd = -1
	}
}
