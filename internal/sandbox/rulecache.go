package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/dirwatch"
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
//
// What each path names is known without a stat of each (which cost 0.5
// to 0.7 ms per call) while inotify reports no entry made, removed or
// renamed along any of the paths (in some ten directories): then only the
// paths it cannot vouch for are looked at again, those in /proc, /sys
// and /dev (whose entries come and go without events) and those that
// are links. Any event, or a directory above that is a link, and every
// path is looked at as before.

// maxRulesets bounds the cache: one entry per session in use (its cwd
// and tmp/ are among the paths), each an open descriptor.
const maxRulesets = 256

type cachedRuleset struct {
	fd    int // owned by the cache
	flags uint32
	// ids is a digest of what every path named, in rulesetPaths order,
	// taken before the build. The ids themselves took 6 KB a session,
	// and the key 4 KB: with a ruleset cached for each of 240 sessions,
	// 2.7 MB of the daemon's 4.1 MB of live heap (docs/bench.md).
	ids [sha256.Size]byte
	// snaps: the directories above the paths, as inotify saw them
	// before ids were taken; empty when they cannot vouch for them.
	// recheck: the paths looked at even so, and named what each named.
	// They change under the write lock.
	snaps   snaps
	recheck []int
	named   []fileID
}

// A rulesetID is the digest of a rulesetKey: the cache's key.
type rulesetID [sha256.Size]byte

// idsDigest is the digest of ids that a cachedRuleset keeps.
func idsDigest(ids []fileID) [sha256.Size]byte {
	h := sha256.New()
	var b [17]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(b[:8], id.dev)
		binary.LittleEndian.PutUint64(b[8:16], id.ino)
		b[16] = 0
		if id.exists {
			b[16] = 1
		}
		h.Write(b[:])
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// pick returns ids at indexes at.
func pick(ids []fileID, at []int) []fileID {
	out := make([]fileID, len(at))
	for i, j := range at {
		out[i] = ids[j]
	}
	return out
}

// snaps are snapshots that vouch together for a set of paths: the last
// look's, for the paths a policy shares with it, and one of the names
// above the others.
type snaps []*dirwatch.Snap

// unchanged reports whether there are snapshots and none has changed.
func (ss snaps) unchanged() bool {
	for _, s := range ss {
		if !ruleWatch().Unchanged(s) {
			return false
		}
	}
	return len(ss) > 0
}

// built counts the rulesets built, not reused (Built).
var built atomic.Int64

// Built is the number of Landlock rulesets built since the process
// started; a call whose ruleset was reused does not count.
func Built() int64 { return built.Load() }

// ruleWatch watches the directories above the rulesets' paths.
var ruleWatch = sync.OnceValue(dirwatch.NewEntries)

// A fileID is what a path names: the device and inode, or nothing.
type fileID struct {
	dev, ino uint64
	exists   bool
}

var rulesets struct {
	mu sync.RWMutex // read: a lookup and its dup; write: a change of m or building
	m  map[rulesetID]*cachedRuleset
	// building has a channel for each key being built, closed when the
	// build is over: a second call for the key (the branches of a
	// parallel stage of a new session) waits for it instead of building
	// it too.
	building map[rulesetID]chan struct{}
}

// startBuild marks key as being built by the caller, who must call the
// returned done; or, if another call is building it, returns nil and
// waits for it.
func startBuild(key rulesetID) (done func()) {
	rulesets.mu.Lock()
	if ch, ok := rulesets.building[key]; ok {
		rulesets.mu.Unlock()
		<-ch
		return nil
	}
	if rulesets.building == nil {
		rulesets.building = map[rulesetID]chan struct{}{}
	}
	ch := make(chan struct{})
	rulesets.building[key] = ch
	rulesets.mu.Unlock()
	return func() {
		rulesets.mu.Lock()
		delete(rulesets.building, key)
		rulesets.mu.Unlock()
		close(ch)
	}
}

// rulesetPaths are the paths of p's rules, in one order.
func rulesetPaths(p *Policy) [][]string { return [][]string{p.RODirs, p.ROFiles, p.RWDirs, p.RWFiles} }

// rulesetKey is the digest of everything the ruleset of p under c is
// built from besides what its paths name.
func rulesetKey(c landlock.Config, p *Policy) rulesetID {
	var b strings.Builder
	fmt.Fprintf(&b, "%#v %v", c, p.DenyFamilies) // every field, unexported ones too
	for _, l := range rulesetPaths(p) {
		b.WriteByte(1)
		b.WriteString(strings.Join(l, "\x00"))
	}
	fmt.Fprintf(&b, "\x01%v %v %v %v", p.Net.Restrict, p.Net.BindOnly, p.Net.Connect, p.Net.Bind)
	return sha256.Sum256([]byte(b.String()))
}

// allPaths are the paths of p's rules, in rulesetPaths order.
func allPaths(p *Policy) []string {
	var all []string
	for _, l := range rulesetPaths(p) {
		all = append(all, l...)
	}
	return all
}

// pseudo says whether path is in /proc, /sys or /dev, whose entries
// appear and go without inotify events.
func pseudo(path string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev"} {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// pathIDs looks at every path as landlock opens it (following links),
// but for those prev, a look inotify still vouches for, found to name a
// file and that were not links or pseudo. recheck are the paths a
// snapshot cannot vouch for: links and pseudo ones. ok is false when one
// cannot be told (an error other than its absence): then the ruleset is
// built afresh, and the build reports the error.
func pathIDs(paths []string, prev *look) (ids []fileID, recheck []int, ok bool) {
	ids = make([]fileID, len(paths))
	for i, path := range paths {
		if prev != nil {
			if j, found := prev.at[path]; found && !prev.again[j] {
				ids[i] = prev.ids[j]
				continue
			}
		}
		var st unix.Stat_t
		err := unix.Lstat(path, &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			recheck = append(recheck, i)
			err = unix.Stat(path, &st)
		} else if pseudo(path) {
			recheck = append(recheck, i)
		}
		if ids[i], ok = idOf(&st, err); !ok {
			return nil, nil, false
		}
	}
	return ids, recheck, true
}

// idOf is what a stat that filled st and returned err says a path
// names; ok is false for an error other than its absence.
func idOf(st *unix.Stat_t, err error) (id fileID, ok bool) {
	switch err {
	case nil:
		return fileID{dev: st.Dev, ino: st.Ino, exists: true}, true
	case unix.ENOENT:
		return fileID{}, true
	}
	return fileID{}, false
}

// sameAt reports whether the paths at recheck still name what named
// says, in the same order.
func sameAt(paths []string, recheck []int, named []fileID) bool {
	for k, i := range recheck {
		var st unix.Stat_t
		if id, ok := idOf(&st, unix.Stat(paths[i], &st)); !ok || id != named[k] {
			return false
		}
	}
	return true
}

// along returns every name along the paths that are not pseudo, each in
// its directory, and those directories, or false if one of them is
// reached through a link (a change where the link points would make no
// event there). Only these names matter: the session's directory, above
// its tmp/, has other files made and renamed at every turn. With known,
// a look, the names and directories known holds are left out: those of
// its paths, and those above the others that it holds.
func along(paths []string, known *look) ([]dirwatch.Entry, map[dirwatch.Entry]bool, map[string]bool, bool) {
	seen := map[dirwatch.Entry]bool{}
	dirs := map[string]bool{}
	for _, p := range paths {
		if pseudo(p) {
			continue
		}
		if known != nil {
			if _, ok := known.at[p]; ok {
				continue
			}
		}
		for q := p; q != "/"; q = filepath.Dir(q) {
			e := dirwatch.Entry{Dir: filepath.Dir(q), Name: filepath.Base(q)}
			if seen[e] || known != nil && known.seen[e] {
				break
			}
			seen[e], dirs[e.Dir] = true, true
		}
	}
	for d := range dirs {
		if known != nil && known.real[d] {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err != nil || r != d {
			return nil, nil, nil, false
		}
	}
	ents := make([]dirwatch.Entry, 0, len(seen))
	for e := range seen {
		ents = append(ents, e)
	}
	return ents, seen, dirs, true
}

// A look is what a build found its paths to name, kept for the builds
// after it. A new session's policy shares all but its cwd and tmp/ with
// the one before; while inotify reports no change along the paths of
// the look, what those paths name is known without a stat of each (0.5
// to 0.6 ms for the ~250 of the default profile), and the names and
// directories above them without a walk and a resolution of each again
// (0.3 to 0.6 ms): the reasoning of a cached ruleset's reuse, for the
// paths two policies share. A look is kept until inotify voids it (the
// daemon takes the first one at start: HoldBase); a build that takes
// from it keeps its own paths' snapshot in its ruleset only.
type look struct {
	at    map[string]int // path -> its index in ids
	ids   []fileID
	again map[int]bool            // indexes of the paths looked at anyway: links and pseudo ones
	seen  map[dirwatch.Entry]bool // the names above the paths
	real  map[string]bool         // the directories above the paths, none reached through a link
	snap  *dirwatch.Snap          // of seen, taken before any of this was found
}

var lastLook atomic.Pointer[look]

// lookAt finds what paths name, with the last look's help where inotify
// vouches for it; without one, it keeps what it found as the look. snaps,
// taken before the paths were looked at, are empty when they cannot vouch
// for them.
func lookAt(paths []string) (ids []fileID, recheck []int, ss snaps, ok bool) {
	if prev := lastLook.Load(); prev != nil {
		ents, _, _, alongOK := along(paths, prev)
		var own *dirwatch.Snap
		if alongOK {
			own, alongOK = ruleWatch().Snapshot(ents)
		}
		// After the new snapshot: a change since is an event it holds.
		if ruleWatch().Unchanged(prev.snap) {
			if ids, recheck, ok = pathIDs(paths, prev); !ok {
				return nil, nil, nil, false
			}
			if alongOK {
				ss = snaps{prev.snap, own}
			}
			return ids, recheck, ss, true
		}
	}
	ents, seen, dirs, alongOK := along(paths, nil)
	var snap *dirwatch.Snap
	if alongOK {
		snap, alongOK = ruleWatch().Snapshot(ents)
	}
	if ids, recheck, ok = pathIDs(paths, nil); !ok {
		return nil, nil, nil, false
	}
	if !alongOK {
		return ids, recheck, nil, true
	}
	l := &look{at: make(map[string]int, len(paths)), ids: ids, again: make(map[int]bool, len(recheck)), seen: seen, real: dirs, snap: snap}
	for i, p := range paths {
		l.at[p] = i
	}
	for _, i := range recheck {
		l.again[i] = true
	}
	lastLook.Store(l)
	return ids, recheck, snaps{snap}, true
}

// cached returns a duplicate of the cached ruleset of key, the caller's
// to close, and the entry it came from, if still says the entry holds;
// fd -1 if not. The lookup and the dup happen under the read lock, so
// that the entry's descriptor is not closed in between.
func cached(key rulesetID, still func(*cachedRuleset) bool) (fd int, flags uint32, cr *cachedRuleset) {
	rulesets.mu.RLock()
	defer rulesets.mu.RUnlock()
	cr = rulesets.m[key]
	if cr == nil || !still(cr) {
		return -1, 0, nil
	}
	fd, err := unix.FcntlInt(uintptr(cr.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, 0, nil
	}
	return fd, cr.flags, cr
}

// reuseRuleset returns a ruleset for p under c, the caller's to close: a
// duplicate of a cached one whose paths still name the same files, or a
// new one built by build (and cached).
func reuseRuleset(c landlock.Config, p *Policy, build func(ids []fileID) (int, uint32, error)) (int, uint32, error) {
	key := rulesetKey(c, p)
	paths := allPaths(p)
	if fd, flags, _ := cached(key, func(cr *cachedRuleset) bool {
		return cr.snaps.unchanged() && sameAt(paths, cr.recheck, cr.named)
	}); fd >= 0 {
		return fd, flags, nil
	}
	done := startBuild(key)
	if done == nil {
		// Built meanwhile: looked up again (built anew if that build
		// failed or the files changed since).
		return reuseRuleset(c, p, build)
	}
	defer done()
	// Every path looked at (or vouched for by the last look), after a
	// snapshot of the directories above them: a change made meanwhile is
	// an event, and the next call looks at every path again.
	ids, recheck, ss, ok := lookAt(paths)
	var digest [sha256.Size]byte
	if ok {
		digest = idsDigest(ids)
		if fd, flags, cr := cached(key, func(cr *cachedRuleset) bool { return cr.ids == digest }); fd >= 0 {
			named := pick(ids, recheck)
			rulesets.mu.Lock()
			cr.snaps, cr.recheck, cr.named = ss, recheck, named
			rulesets.mu.Unlock()
			return fd, flags, nil
		}
	}
	fd, flags, err := build(ids)
	if err == nil && fd >= 0 {
		built.Add(1)
	}
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
		rulesets.m = map[rulesetID]*cachedRuleset{}
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
	rulesets.m[key] = &cachedRuleset{fd: own, flags: flags, ids: digest, snaps: ss, recheck: recheck, named: pick(ids, recheck)}
	rulesets.mu.Unlock()
	if drop >= 0 {
		unix.Close(drop)
	}
	return fd, flags, nil
}
