package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Spare session directories.
//
// Creating a file or a directory is the dearest thing a new session does
// on disk: ext4 allocates an inode, 50–400 µs of kernel CPU each on the
// machine measured, and more there after many deletions (without a
// journal, ext4 passes over the inodes deleted in the last minute;
// docs/bench.md), and by the
// end of its first turn a session has created eight (its directory,
// meta.json, chat, context.jsonl, events.jsonl, usage.json, systemprompt,
// tmp/). Renaming a directory costs about one. So a Manager with
// Options.Spares keeps that many directories made ahead, holding every
// one of those files, empty, and makes them when it has been left alone
// for a moment (fillDelay after it was last asked for one: not while a
// burst of new sessions goes on, which would pay for files it may never
// use). New writes
// meta.json into a spare and renames it to the new id; a session without
// a spare is made as before.
//
// A spare is a directory of the sessions directory named .spare-<hex>,
// which no loader takes for a session (validID). It outlives the daemon:
// the next Open keeps each spare that is exactly as made (its files empty,
// tmp/ an empty directory of the same disk) and removes anything else, as
// a spare half made, or one a crash left between its meta.json and its
// rename. Nothing in a spare is acknowledged to anyone, so nothing is
// fsync'd for it: the first prompt of its session makes the directory
// durable (promptLocked), as for any other.

const sparePrefix = ".spare-"

// spareFiles are a spare's empty files; meta.json is written by New.
var spareFiles = []string{"meta.json", "chat", "context.jsonl", "events.jsonl", "usage.json", "systemprompt"}

// fillDelay is how long a Manager waits, after a spare was taken (or
// after Open), before it makes new ones: a session made is usually
// prompted at once, and its first turn should not share the disk and the
// CPU with the making of the next session's files.
const fillDelay = 100 * time.Millisecond

// spares are a Manager's spare directories.
type spares struct {
	mu      sync.Mutex
	ready   []string // full paths of the spares made
	want    int      // how many to keep (Options.Spares)
	timer   *time.Timer
	asked   time.Time // when a spare was last asked for
	filling bool      // a fill is scheduled or running
	closed  bool
	done    sync.WaitGroup // the fill running
}

// openSpares keeps the spares on disk that are as made and removes the
// others, then schedules a fill.
func (m *Manager) openSpares(ents []os.DirEntry) {
	m.spare.want = m.o.Spares
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), sparePrefix) {
			continue
		}
		d := filepath.Join(m.o.Dir, e.Name())
		if e.IsDir() && len(m.spare.ready) < m.spare.want && asMade(d) {
			m.spare.ready = append(m.spare.ready, d)
			continue
		}
		if err := removeSpare(d); err != nil {
			m.logf("spare %s not removed: %v", d, err)
		}
	}
	m.scheduleFill()
}

// asMade reports whether d holds exactly a spare's empty files and its
// empty tmp/, on d's own disk, each with the mode it is made with (0700
// for the directories, 0600 for the files): a spare made while the umask
// was narrowed had directories of 0600, which a stage cannot enter.
func asMade(d string) bool {
	ents, err := os.ReadDir(d)
	if err != nil || len(ents) != len(spareFiles)+1 {
		return false
	}
	var st unix.Stat_t
	if unix.Lstat(d, &st) != nil || st.Mode&0777 != 0700 {
		return false
	}
	dev := st.Dev
	for _, e := range ents {
		if unix.Lstat(filepath.Join(d, e.Name()), &st) != nil || st.Dev != dev {
			return false
		}
		switch {
		case e.Name() == "tmp":
			if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0777 != 0700 {
				return false
			}
			if sub, err := os.ReadDir(filepath.Join(d, "tmp")); err != nil || len(sub) != 0 {
				return false
			}
		case slices.Contains(spareFiles, e.Name()):
			if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != 0 || st.Mode&0777 != 0600 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// removeSpare removes a spare, or whatever else carries the name of one;
// a mount on its tmp (none is made there) is let go first, so that the
// removal cannot reach into it.
func removeSpare(d string) error {
	if err := unmountTmp(filepath.Join(d, "tmp")); err != nil {
		return err
	}
	return os.RemoveAll(d)
}

// takeSpare hands out a spare, if one is ready, and schedules the
// making of another.
func (m *Manager) takeSpare() (string, bool) {
	m.spare.mu.Lock()
	n := len(m.spare.ready)
	if n == 0 || m.spare.closed {
		m.spare.mu.Unlock()
		m.scheduleFill()
		return "", false
	}
	d := m.spare.ready[n-1]
	m.spare.ready = m.spare.ready[:n-1]
	m.spare.mu.Unlock()
	m.scheduleFill()
	return d, true
}

// returnSpare puts back a spare New took and did not use.
func (m *Manager) returnSpare(d string) {
	m.spare.mu.Lock()
	defer m.spare.mu.Unlock()
	m.spare.ready = append(m.spare.ready, d)
}

// dropSpare removes a spare New could not use; one refused for want of
// RENAME_NOREPLACE ends the spares.
func (m *Manager) dropSpare(d string, err error) {
	m.logf("spare %s not used: %v", d, err)
	if err == errNoSpare {
		m.spare.mu.Lock()
		m.spare.want = 0
		m.spare.mu.Unlock()
	}
	if err := removeSpare(d); err != nil {
		m.logf("spare %s not removed: %v", d, err)
	}
}

// scheduleFill notes that a spare was asked for, and makes the missing
// ones once none has been for fillDelay, unless that is already
// scheduled or under way.
func (m *Manager) scheduleFill() {
	s := &m.spare
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = time.Now()
	if s.filling || s.closed || len(s.ready) >= s.want {
		return
	}
	s.filling = true
	s.done.Add(1)
	s.timer = time.AfterFunc(fillDelay, m.fill)
}

// fill makes spares until there are as many as wanted, or until one is
// asked for: a burst of new sessions (a batch, a script) is not slowed by
// the making of the files its sessions may never use; the fill goes on
// fillDelay after the burst.
func (m *Manager) fill() {
	s := &m.spare
	defer s.done.Done()
	for {
		s.mu.Lock()
		if s.closed || len(s.ready) >= s.want {
			s.filling = false
			s.mu.Unlock()
			return
		}
		if wait := fillDelay - time.Since(s.asked); wait > 0 {
			s.done.Add(1)
			s.timer = time.AfterFunc(wait, m.fill)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		d, err := makeSpare(m.o.Dir)
		s.mu.Lock()
		if err != nil {
			s.filling = false
			s.mu.Unlock()
			m.logf("no spare session directory: %v", err)
			return
		}
		s.ready = append(s.ready, d) // if closed, the next Open takes it
		s.mu.Unlock()
	}
}

// closeSpares stops the filling, and waits for a fill running.
func (m *Manager) closeSpares() {
	s := &m.spare
	s.mu.Lock()
	s.closed = true
	if s.timer != nil && s.timer.Stop() {
		s.done.Done() // the fill will not run
	}
	s.mu.Unlock()
	s.done.Wait()
}

// makeSpare makes a spare in dir and returns its path.
func makeSpare(dir string) (string, error) {
	var b [8]byte
	rand.Read(b[:])
	d := filepath.Join(dir, sparePrefix+hex.EncodeToString(b[:]))
	if err := os.Mkdir(d, 0700); err != nil {
		return "", err
	}
	for _, name := range spareFiles {
		fd, err := unix.Open(filepath.Join(d, name), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0600)
		if err != nil {
			os.RemoveAll(d)
			return "", err
		}
		unix.Close(fd)
	}
	if err := os.Mkdir(filepath.Join(d, "tmp"), 0700); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// errNoSpare says a spare cannot be used here (the file system has no
// RENAME_NOREPLACE): New makes the directory itself, from then on.
var errNoSpare = errors.New("no spares")

// adopt makes the spare d the directory dir of a new session whose
// meta.json is meta: written into the spare first, so that a crash
// leaves either a whole session or a spare the next Open removes. An id
// already on disk is os.ErrExist, and d stays a spare.
func adopt(d, dir string, meta []byte) error {
	f, err := os.OpenFile(filepath.Join(d, "meta.json"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(meta)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	err = unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
		return nil
	case unix.EEXIST:
		return os.ErrExist
	case unix.EINVAL, unix.ENOSYS:
		return errNoSpare
	}
	return err
}
