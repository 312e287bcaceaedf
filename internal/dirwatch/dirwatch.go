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
	mu   sync.Mutex
	fd   int            // the inotify descriptor, non-blocking; -1 once it could not be made
	wds  map[string]int // watched directory -> its watch
	gens map[int]uint64 // watch -> the seq of its last change
	seq  uint64
}

// watchMask is every change to a directory's entries, and to the
// directory itself.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// New returns a Watch; one that cannot watch (no inotify) answers every
// question with false.
func New() *Watch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &Watch{fd: fd, wds: map[string]int{}, gens: map[int]uint64{}}
}

// Gen returns a number that changes whenever an entry of dir is
// created, removed, renamed, written or has its attributes changed, and
// whenever dir itself is replaced; ok is false where dir cannot be
// watched, and then nothing can be cached.
func (w *Watch) Gen(dir string) (gen uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return 0, false
	}
	w.drainLocked()
	return w.genLocked(dir)
}

func (w *Watch) genLocked(dir string) (uint64, bool) {
	wd, known := w.wds[dir]
	if !known {
		var err error
		if wd, err = unix.InotifyAddWatch(w.fd, dir, watchMask); err != nil {
			return 0, false
		}
		w.seq++
		w.wds[dir], w.gens[wd] = wd, w.seq
	}
	return w.gens[wd], true
}

// drainLocked reads the queued events and notes which watches saw a
// change. A watch whose directory went away is forgotten (its path is
// watched again at the next question); an overflowed queue counts as a
// change everywhere.
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
			off += unix.SizeofInotifyEvent + int(ev.Len)
			w.seq++
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				for wd := range w.gens {
					w.gens[wd] = w.seq
				}
			case ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
				w.forgetLocked(int(ev.Wd))
			default:
				if _, ok := w.gens[int(ev.Wd)]; ok {
					w.gens[int(ev.Wd)] = w.seq
				}
			}
		}
	}
}

func (w *Watch) forgetLocked(wd int) {
	for dir, d := range w.wds {
		if d == wd {
			delete(w.wds, dir)
		}
	}
	delete(w.gens, wd)
	unix.InotifyRmWatch(w.fd, uint32(wd))
}

// Snapshot returns the generation of each of dirs, watching them from
// now on; ok is false if one of them cannot be watched.
func (w *Watch) Snapshot(dirs []string) (snap map[string]uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil, false
	}
	w.drainLocked()
	snap = make(map[string]uint64, len(dirs))
	for _, d := range dirs {
		g, ok := w.genLocked(d)
		if !ok {
			return nil, false
		}
		snap[d] = g
	}
	return snap, true
}

// Unchanged reports whether no directory of snap has changed since
// Snapshot returned it.
func (w *Watch) Unchanged(snap map[string]uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 || snap == nil {
		return false
	}
	w.drainLocked()
	for d, g := range snap {
		wd, ok := w.wds[d]
		if !ok || w.gens[wd] != g {
			return false
		}
	}
	return true
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
