package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdLock takes the lock of socket as another daemon would, with pid in
// the lock file, and returns its release.
func holdLock(t *testing.T, socket, pid string) func() {
	t.Helper()
	f, err := os.OpenFile(socket+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(pid+"\n"), 0)
	return func() { f.Close() }
}

// A lock whose daemon lives is refused at once; one whose daemon is gone
// (killed, its files not all closed yet) is waited for.
func TestLockWaitsOnlyForAGoneDaemon(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "ollie.sock")

	release := holdLock(t, socket, strconv.Itoa(os.Getpid()))
	start := time.Now()
	_, err := lock(socket)
	if err == nil || !strings.Contains(err.Error(), "already serving") {
		t.Fatalf("lock of a live daemon: %v", err)
	}
	if d := time.Since(start); d >= lockWait {
		t.Errorf("a live daemon's lock was waited for (%v)", d)
	}
	release()

	release = holdLock(t, socket, "2147483647") // no such process
	go func() {
		time.Sleep(100 * time.Millisecond)
		release()
	}()
	f, err := lock(socket)
	if err != nil {
		t.Fatalf("the lock of a daemon that is gone was not waited for: %v", err)
	}
	f.Close()

	defer holdLock(t, socket, "2147483647")()
	if _, err := lock(socket); err == nil {
		t.Fatal("a lock held for ever was taken")
	}
}

func TestGone(t *testing.T) {
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	zpid := strconv.Itoa(zombie.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + zpid + "/stat")
		if strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no zombie: %s", b)
		}
	}
	if !gone(zpid) {
		t.Error("a zombie is not gone")
	}
	for pid, want := range map[string]bool{strconv.Itoa(os.Getpid()): false, "2147483647": true, "": false, "x": false} {
		if got := gone(pid); got != want {
			t.Errorf("gone(%q) = %v, want %v", pid, got, want)
		}
	}
}

// The socket's mode comes from its 0700 directory and a chmod, never
// from the umask: the umask is the whole process's, and a directory made
// meanwhile by another goroutine (a spare session directory, made in the
// background while the daemon starts) came out 0600, which a stage, root
// without capabilities, cannot enter (`mkdir -p "$TMPDIR/x"` failed with
// "cannot create directory '.../s/<id>': Permission denied").
func TestListenLeavesUmaskAlone(t *testing.T) {
	rt := t.TempDir()
	if err := privateDir(rt); err != nil {
		t.Fatal(err)
	}
	dirs := t.TempDir()
	stop := make(chan struct{})
	bad := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			d := filepath.Join(dirs, strconv.Itoa(i))
			if err := os.Mkdir(d, 0o700); err != nil {
				continue
			}
			if fi, err := os.Lstat(d); err == nil && fi.Mode().Perm() != 0o700 {
				select {
				case bad <- d + " " + fi.Mode().String():
				default:
				}
			}
			os.Remove(d)
		}
	}()
	for i := 0; i < 300; i++ {
		l, err := listenUnix(filepath.Join(rt, "s"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(rt, "s"+strconv.Itoa(i))); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("socket mode %v (%v), want 0600", fi.Mode(), err)
		}
		l.Close()
	}
	close(stop)
	<-done
	select {
	case d := <-bad:
		t.Errorf("a directory made with mode 0700 while the daemon listened: %s", d)
	default:
	}
}
