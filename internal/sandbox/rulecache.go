package sandbox

import (
	"fmt"
	"strings"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Building a Landlock ruleset opens every path of the policy and adds a
// rule for each: some 250 paths for the default profile (the carved
// system and /proc entries), three system calls each, on every
// execute_code call. A ruleset is reused instead when its policy is the
// same and every one of its paths is still the same file: Landlock binds
// a rule to the inode the path named when the rule was added (and keeps
// that inode alive), so a ruleset built now from the same paths naming
// the same inodes would be this one. Any path that now names another
// file, or exists where it did not, builds a new one.

// maxRulesets bounds the cache: one entry per session in use (its cwd
// and tmp/ are among the paths), each an open descriptor.
const maxRulesets = 256

type cachedRuleset struct {
	fd    int // owned by the cache
	flags uint32
	ids   []fileID // of every path, in rulesetPaths order, taken before the build
}

// A fileID is what a path names: the device and inode, or nothing.
type fileID struct {
	dev, ino uint64
	exists   bool
}

var rulesets struct {
	mu sync.RWMutex // read: a lookup and its dup; write: a change of m
	m  map[string]*cachedRuleset
}

// rulesetPaths are the paths of p's rules, in one order.
func rulesetPaths(p *Policy) [][]string { return [][]string{p.RODirs, p.ROFiles, p.RWDirs, p.RWFiles} }

// rulesetKey is everything the ruleset of p under c is built from
// besides what its paths name.
func rulesetKey(c landlock.Config, p *Policy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%#v %v", c, p.DenyFamilies) // every field, unexported ones too
	for _, l := range rulesetPaths(p) {
		b.WriteByte(1)
		b.WriteString(strings.Join(l, "\x00"))
	}
	fmt.Fprintf(&b, "\x01%v %v %v %v", p.Net.Restrict, p.Net.BindOnly, p.Net.Connect, p.Net.Bind)
	return b.String()
}

// pathIDs stats every path as landlock opens it (following links). ok is
// false when one cannot be told (an error other than its absence): then
// the ruleset is built afresh, and the build reports the error.
func pathIDs(p *Policy) (ids []fileID, ok bool) {
	for _, l := range rulesetPaths(p) {
		for _, path := range l {
			var st unix.Stat_t
			switch err := unix.Stat(path, &st); err {
			case nil:
				ids = append(ids, fileID{dev: st.Dev, ino: st.Ino, exists: true})
			case unix.ENOENT:
				ids = append(ids, fileID{})
			default:
				return nil, false
			}
		}
	}
	return ids, true
}

func sameIDs(a, b []fileID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// reuseRuleset returns a ruleset for p under c, the caller's to close: a
// duplicate of a cached one whose paths still name the same files, or a
// new one built by build (and cached).
func reuseRuleset(c landlock.Config, p *Policy, build func() (int, uint32, error)) (int, uint32, error) {
	key := rulesetKey(c, p)
	ids, ok := pathIDs(p)
	if ok {
		rulesets.mu.RLock()
		cr := rulesets.m[key]
		if cr != nil && sameIDs(cr.ids, ids) {
			fd, err := unix.FcntlInt(uintptr(cr.fd), unix.F_DUPFD_CLOEXEC, 0)
			flags := cr.flags
			rulesets.mu.RUnlock()
			if err == nil {
				return fd, flags, nil
			}
		} else {
			rulesets.mu.RUnlock()
		}
	}
	fd, flags, err := build()
	if err != nil || fd < 0 || !ok {
		return fd, flags, err
	}
	own, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fd, flags, nil
	}
	// A ruleset dropped from the cache is closed after the lock is let
	// go: the last close of one frees its rules, a reference to each of
	// its some 250 inodes, while every lookup would wait.
	drop := -1
	rulesets.mu.Lock()
	if rulesets.m == nil {
		rulesets.m = map[string]*cachedRuleset{}
	}
	if old := rulesets.m[key]; old != nil {
		drop = old.fd
	} else if len(rulesets.m) >= maxRulesets {
		for k, v := range rulesets.m {
			drop = v.fd
			delete(rulesets.m, k)
			break
		}
	}
	rulesets.m[key] = &cachedRuleset{fd: own, flags: flags, ids: ids}
	rulesets.mu.Unlock()
	if drop >= 0 {
		unix.Close(drop)
	}
	return fd, flags, nil
}
