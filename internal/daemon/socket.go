package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/who"
)

// privateDir makes dir (mode 0700) or checks that an existing one is a
// real directory owned by us, tightening its mode if needed. A runtime
// directory in /tmp that someone else made is refused: it could be a trap.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to uid %d, not to us (uid %d); refusing to put the socket there", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm() != 0700 {
		return os.Chmod(dir, 0700)
	}
	return nil
}

// lock takes the daemon lock next to the socket for the life of the
// process. A second daemon fails here, before touching the socket.
func lock(socket string) (*os.File, error) {
	path := socket + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0600)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(lockWait); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		pid := strings.TrimSpace(string(b[:n]))
		// A daemon that was killed keeps the lock until the last of its
		// threads has closed its files, a moment after it may already
		// have been waited for (seen under load, a daemon holding a few
		// hundred descriptors): the lock of a daemon that is gone or a
		// zombie is waited for, a while.
		if !gone(pid) || time.Now().After(deadline) {
			f.Close()
			if pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("another ollie daemon (pid %s) is already serving %s; stop it with 'ollie stop'", pid, socket)
		}
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

// lockWait is how long a lock whose daemon is gone is waited for.
const lockWait = 2 * time.Second

// gone says whether the process pid (as the lock file has it) has
// exited, or is exiting: no such process, or a zombie.
func gone(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false // not a pid: someone else's lock, not to be waited for
	}
	st, ok := who.State(n)
	return !ok || st == 'Z' || st == 'X'
}

// listenUnix listens on socket with mode 0600, removing a stale socket
// left by a daemon that died. The caller holds the lock, so a socket that
// still answers belongs to a daemon that does not use our lock file.
func listenUnix(socket string) (net.Listener, error) {
	if fi, err := os.Lstat(socket); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; not removing it", socket)
		}
		if c, err := net.DialTimeout("unix", socket, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("a daemon is already listening on %s", socket)
		}
		if err := os.Remove(socket); err != nil {
			return nil, fmt.Errorf("remove stale socket: %v", err)
		}
	}
	// No other user can reach the socket between its bind and the chmod
	// below: its directory is privateDir's, 0700 and ours. Not the umask:
	// it is the whole process's, and a directory another goroutine made
	// meanwhile (a spare session's, made in the background as the daemon
	// starts) came out 0600, which a stage, root without capabilities,
	// cannot enter.
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(socket, 0600); err != nil {
		l.Close()
		return nil, err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	return l, nil
}

// ReadPid returns the pid recorded in the state directory, or 0.
func ReadPid(stateDir string) int {
	b, err := os.ReadFile(filepath.Join(stateDir, "ollie.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func writePid(stateDir string) error {
	if err := os.MkdirAll(stateDir, 0700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(stateDir, "ollie.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0600)
}

var errClosed = errors.New("daemon closed")

// LockPid returns the pid written in the daemon lock next to socket, or 0.
func LockPid(socket string) int {
	b, err := os.ReadFile(socket + ".lock")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
