// Package dirwatch tells whether directories' entries may have changed
// since an earlier look, from inotify, without a stat of each entry.
//
// There is no goroutine: each question first reads the events already
// queued, without blocking. The kernel queues an event within the call
// that made the change, so a change whose call has returned is seen by
// the next question. A mount over a watched directory makes no event:
// what is cached through a Watch holds for changes made by calls, not by
// mounts.
package dirwatch

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Watch watches directories as they are asked about. Its methods may
// be called from any goroutine.
type Watch struct {
	mask uint32

	mu        sync.Mutex
	fd        int                // the inotify descriptor, non-blocking; -1 once it could not be made
	dirs      map[string]watched // watched directory -> its watch
	byWd      map[int]uint64     // watch descriptor -> the epoch of its watch
	gens      map[uint64]uint64  // epoch -> the seq of the directory's last change
	names     map[named]uint64   // the seq of the last change of a name someone asked about
	seq       uint64
	overflows uint64 // events lost: every snapshot before is void
}

type watched struct {
	wd    int
	epoch uint64 // unique to this watch: a descriptor number is reused
}

type named struct {
	epoch uint64
	name  string
}

// watchMask is every change to a directory's entries, and to the
// directory itself.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// entriesMask is a change of which names a directory holds and of what
// they name: what a path's resolution depends on.
const entriesMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// New returns a Watch of every change to directories' entries, their
// contents included; one that cannot watch (no inotify) answers every
// question with false.
func New() *Watch { return newWatch(watchMask) }

// NewEntries returns a Watch of the names directories hold only: an
// entry made, removed or renamed, a directory moved or removed. A file
// written or a mode changed is not a change to it.
func NewEntries() *Watch { return newWatch(entriesMask) }

func newWatch(mask uint32) *Watch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &Watch{mask: mask, fd: fd, dirs: map[string]watched{}, byWd: map[int]uint64{},
		gens: map[uint64]uint64{}, names: map[named]uint64{}}
}

// Gen returns a number that changes whenever an entry of dir changes,
// and whenever dir itself is moved or removed; ok is false where dir
// cannot be watched, and then nothing can be cached.
func (w *Watch) Gen(dir string) (gen uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return 0, false
	}
	w.drainLocked()
	d, ok := w.watchLocked(dir)
	if !ok {
		return 0, false
	}
	return w.gens[d.epoch], true
}

// An Entry is a name in a directory; an empty Name stands for every
// entry of Dir.
type Entry struct{ Dir, Name string }

// A Snap is what Snapshot saw, for Unchanged.
type Snap struct {
	overflows uint64
	ents      []snapEnt
}

type snapEnt struct {
	dir   string
	key   named // key.name "" for the whole directory
	epoch uint64
	gen   uint64
}

// Snapshot returns what each of ents is now, watching their directories
// from now on; ok is false if one of them cannot be watched.
func (w *Watch) Snapshot(ents []Entry) (snap *Snap, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil, false
	}
	w.drainLocked()
	snap = &Snap{overflows: w.overflows, ents: make([]snapEnt, 0, len(ents))}
	for _, e := range ents {
		d, ok := w.watchLocked(e.Dir)
		if !ok {
			return nil, false
		}
		k := named{d.epoch, e.Name}
		var g uint64
		if e.Name == "" {
			g = w.gens[d.epoch]
		} else {
			g = w.names[k]
			w.names[k] = g // asked about: its changes are noted from now on
		}
		snap.ents = append(snap.ents, snapEnt{dir: e.Dir, key: k, epoch: d.epoch, gen: g})
	}
	return snap, true
}

// Unchanged reports whether nothing snap holds has changed since
// Snapshot returned it.
func (w *Watch) Unchanged(snap *Snap) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 || snap == nil {
		return false
	}
	w.drainLocked()
	if w.overflows != snap.overflows {
		return false
	}
	for _, e := range snap.ents {
		if d, ok := w.dirs[e.dir]; !ok || d.epoch != e.epoch {
			return false
		}
		g := w.gens[e.epoch]
		if e.key.name != "" {
			g = w.names[e.key]
		}
		if g != e.gen {
			return false
		}
	}
	return true
}

// watchLocked returns dir's watch, adding one if there is none.
func (w *Watch) watchLocked(dir string) (watched, bool) {
	if d, ok := w.dirs[dir]; ok {
		return d, true
	}
	wd, err := unix.InotifyAddWatch(w.fd, dir, w.mask)
	if err != nil {
		return watched{}, false
	}
	if old, ok := w.byWd[wd]; ok {
		// The same directory under another path (a link, a bind):
		// one watch, so one epoch for both.
		d := watched{wd, old}
		w.dirs[dir] = d
		return d, true
	}
	w.seq++
	d := watched{wd, w.seq}
	w.dirs[dir], w.byWd[wd], w.gens[d.epoch] = d, d.epoch, w.seq
	return d, true
}

// drainLocked reads the queued events and notes what changed. A watch
// whose directory went away is forgotten (its path is watched anew when
// asked about again); an overflowed queue voids every snapshot.
func (w *Watch) drainLocked() {
	var buf [4096]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: nothing more is queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				b := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				for i, c := range b {
					if c == 0 {
						b = b[:i]
						break
					}
				}
				name = string(b)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.seq++
			epoch, known := w.byWd[int(ev.Wd)]
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				w.overflows++
				for e := range w.gens {
					w.gens[e] = w.seq
				}
			case !known:
			case ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
				w.forgetLocked(int(ev.Wd), epoch)
			default:
				w.gens[epoch] = w.seq
				if k := (named{epoch, name}); name != "" {
					if _, asked := w.names[k]; asked {
						w.names[k] = w.seq
					}
				}
			}
		}
	}
}

func (w *Watch) forgetLocked(wd int, epoch uint64) {
	for dir, d := range w.dirs {
		if d.epoch == epoch {
			delete(w.dirs, dir)
		}
	}
	for k := range w.names {
		if k.epoch == epoch {
			delete(w.names, k)
		}
	}
	delete(w.byWd, wd)
	delete(w.gens, epoch)
	unix.InotifyRmWatch(w.fd, uint32(wd))
}

// Close releases the inotify descriptor.
func (w *Watch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}
