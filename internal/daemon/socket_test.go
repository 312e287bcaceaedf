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
