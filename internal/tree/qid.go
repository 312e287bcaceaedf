package tree

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"9fans.net/go/plan9"
)

// Qids allocates the integer qid paths of the tree. Paths are never
// derived from path strings: renaming a file keeps its qid, and a new file
// with an old name gets a new one. Zero is reserved for the root.
//
// Safe for concurrent use.
type Qids struct {
	next atomic.Uint64

	mu   sync.Mutex
	disk map[devIno]uint64 // on-disk files, so a file keeps its qid across walks
}

type devIno struct{ dev, ino uint64 }

// NewQids returns an allocator whose first path is 1.
func NewQids() *Qids {
	q := &Qids{disk: map[devIno]uint64{}}
	return q
}

// Next allocates one path.
func (q *Qids) Next() uint64 { return q.next.Add(1) }

// Block allocates n consecutive paths and returns the first.
func (q *Qids) Block(n int) uint64 { return q.next.Add(uint64(n)) - uint64(n) + 1 }

// Disk returns the path of the on-disk file (dev, ino), allocating one the
// first time it is seen.
func (q *Qids) Disk(dev, ino uint64) uint64 {
	k := devIno{dev, ino}
	q.mu.Lock()
	defer q.mu.Unlock()
	p, ok := q.disk[k]
	if !ok {
		p = q.Next()
		q.disk[k] = p
	}
	return p
}

// Forget drops the mapping of a removed on-disk file, so a later file that
// reuses the inode number gets a fresh qid.
func (q *Qids) Forget(dev, ino uint64) {
	q.mu.Lock()
	delete(q.disk, devIno{dev, ino})
	q.mu.Unlock()
}

// Version is a file's content version, bumped on every change. The zero
// value is ready to use.
type Version struct{ v atomic.Uint32 }

// Bump records a change.
func (v *Version) Bump() { v.v.Add(1) }

// Load returns the current version.
func (v *Version) Load() uint32 { return v.v.Load() }

// qid builds a Qid.
func qid(path uint64, vers uint32, perm plan9.Perm) plan9.Qid {
	return plan9.Qid{Path: path, Vers: vers, Type: uint8(perm >> 24)}
}

func (q *Qids) pathOf(fi os.FileInfo) uint64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return q.Disk(st.Dev, st.Ino)
}

// rebind makes the on-disk file fi answer to the qid of old, the file it
// atomically replaced; old's inode is gone, and a file that reuses its
// number later must get a fresh qid.
func (q *Qids) rebind(old, fi os.FileInfo) {
	ost, ok1 := old.Sys().(*syscall.Stat_t)
	st, ok2 := fi.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	ok, nk := devIno{ost.Dev, ost.Ino}, devIno{st.Dev, st.Ino}
	p, found := q.disk[ok]
	if !found {
		return
	}
	if ok != nk {
		delete(q.disk, ok)
	}
	q.disk[nk] = p
}
