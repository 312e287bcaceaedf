package session

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Two tool calls of one session must not both find no mount and stack
// two: the session's tmpMu serializes its mounts (one lock per session,
// so that sessions starting tool calls at once do not wait for each
// other's stats and mounts).

// tmpUnprivileged is set once a mount was refused with EPERM: the daemon
// cannot gain the privilege later, so it stops asking.
var tmpUnprivileged atomic.Bool

// quotaTmp gives d a tmpfs of its own, quotaMB in size, so that a session
// that fills its tmp (a dd, or a stage's output spooled there) gets
// ENOSPC and every other session, and the disk, are untouched. Only a
// daemon with CAP_SYS_ADMIN can mount one; for others d stays a plain
// directory and the per-file limit (limits.file_mb) is all there is, as
// docs/execute.md says. A tmpfs already there (left by a daemon that
// died) is kept; Manager.Close and Remove unmount it.
func quotaTmp(d string, quotaMB int) error {
	if quotaMB <= 0 {
		return nil
	}
	if tmpUnprivileged.Load() {
		return nil
	}
	if mounted, err := isMountPoint(d); err != nil || mounted {
		return err
	}
	opts := fmt.Sprintf("size=%dm,mode=0700,uid=%d,gid=%d", quotaMB, os.Getuid(), os.Getgid())
	err := unix.Mount("ollie-tmp", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts)
	if err == unix.EPERM {
		tmpUnprivileged.Store(true)
		return nil // not privileged: no quota (see above)
	}
	if err != nil {
		return fmt.Errorf("tmp quota: mounting a tmpfs on %s: %v", d, err)
	}
	return nil
}

// isMountPoint reports whether d is the root of a mount of its own.
func isMountPoint(d string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(d, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(d), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// ReleaseTmp unmounts the session's tmpfs, if it has one, before its
// directory is removed or the daemon stops; EnsureTmp fails from then on.
func (s *Session) ReleaseTmp() {
	d := s.TmpDir()
	s.tmpMu.Lock()
	defer s.tmpMu.Unlock()
	s.tmpGone = true
	unmountTmp(d)
}

// unmountTmp lets go of a tmpfs mounted on d, if there is one.
func unmountTmp(d string) error {
	if mounted, err := isMountPoint(d); err != nil || !mounted {
		return nil
	}
	return unix.Unmount(d, unix.MNT_DETACH)
}
