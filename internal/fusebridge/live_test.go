package fusebridge_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

// waitFor turns a hang into a failure.
func waitFor[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(hangTimeout):
		t.Fatalf("%s: hung", what)
		panic("unreachable")
	}
}

func TestCtrlCEndsBlockedRead(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	for range 3 {
		cmd := exec.Command("cat", filepath.Join(e.mnt, "block"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, e.tree.Blocked(), "read reaching the server")
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		err := waitFor(t, done, "cat after SIGINT")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Fatalf("cat ended with %v, want killed by SIGINT", err)
		}
	}
	if got := e.sh(`cat $M/hello`); got != "hello, world\n" {
		t.Fatalf("mount unusable after interrupts: %q", got)
	}
}

func TestBlockedReadReturnsData(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	out := make(chan string, 1)
	go func() { out <- e.sh(`cat $M/block`) }()
	waitFor(t, e.tree.Blocked(), "read reaching the server")
	e.tree.Unblock()
	if got := waitFor(t, out, "cat block"); got != "unblocked\n" {
		t.Fatalf("cat block = %q", got)
	}
}

// follow starts tail -f on the mount's /grow and returns its lines.
func follow(t *testing.T, e *env) <-chan string {
	cmd := exec.Command("tail", "-s", "0.1", "-f", filepath.Join(e.mnt, "grow"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

func TestTailFollowsGrowingFile(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	e.tree.Append("first\n")
	lines := follow(t, e)
	if got := waitFor(t, lines, "tail -f first line"); got != "first" {
		t.Fatalf("tail -f printed %q", got)
	}
	for _, want := range []string{"second", "third"} {
		e.tree.Append(want + "\n")
		if got := waitFor(t, lines, "tail -f of "+want); got != want {
			t.Fatalf("tail -f printed %q, want %q", got, want)
		}
	}
	e.sh(`echo fourth >> $M/grow`)
	if got := waitFor(t, lines, "tail -f of a write through the mount"); got != "fourth" {
		t.Fatalf("tail -f printed %q", got)
	}
}

func TestDaemonRestartReconnects(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	e.tree.Append("before\n")
	lines := follow(t, e)
	waitFor(t, lines, "tail -f before restart")
	held, err := os.Open(filepath.Join(e.mnt, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	e.ln.Close() // the daemon dies...
	e.listen()   // ...and comes back with the same files

	if got := e.sh(`cat $M/hello`); got != "hello, world\n" {
		t.Fatalf("cat after restart = %q", got)
	}
	e.sh(`echo after > $M/dir/after; test "$(cat $M/dir/after)" = after`)
	buf := make([]byte, 5)
	if n, err := held.ReadAt(buf, 0); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("file open across the restart: %q, %v", buf[:n], err)
	}
	e.tree.Append("after restart\n")
	if got := waitFor(t, lines, "tail -f across restart"); got != "after restart" {
		t.Fatalf("tail -f printed %q", got)
	}
	if !strings.Contains(e.log.String(), "lost the 9P connection") {
		t.Errorf("the mount did not log the lost connection:\n%s", e.log)
	}
}

func TestDaemonDownFailsFast(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	e.ln.Close()
	os.Remove(e.sock)
	out, err := e.try(`cat $M/hello`)
	if err == nil || !strings.Contains(out, "not connected") {
		t.Fatalf("cat with the daemon down: %v %q; want ENOTCONN", err, out)
	}
	e.listen()
	if got := e.sh(`cat $M/hello`); got != "hello, world\n" {
		t.Fatalf("cat after the daemon came back = %q", got)
	}
}

func TestNoReconnectUnmounts(t *testing.T) {
	e := mount(t, fusebridge.Options{NoReconnect: true})
	e.ln.Close()
	done := make(chan error, 1)
	go func() { done <- e.srv.Wait() }()
	err := waitFor(t, done, "Wait after the daemon died")
	if !errs.Is(err, errs.Unavailable) {
		t.Fatalf("Wait = %v, want unavailable", err)
	}
	if _, err := os.ReadDir(e.mnt); err != nil {
		t.Fatalf("mount point after unmount: %v", err)
	}
}

func TestMountPointErrors(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", e.sock) }
	bg := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0644)
	for _, tt := range []struct {
		dir  string
		kind errs.Kind
		text string
	}{
		{e.mnt, errs.Busy, "already mounted"},
		{dir, errs.Busy, "not empty"},
		{file, errs.NotDir, "not a directory"},
		{filepath.Join(dir, "missing"), errs.NotExist, "no such file"},
	} {
		srv, err := fusebridge.Mount(bg, tt.dir, dial, fusebridge.Options{})
		if err == nil {
			srv.Unmount()
			t.Errorf("Mount(%s) succeeded", tt.dir)
			continue
		}
		if !errs.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("Mount(%s) = %v, want %v (%s)", tt.dir, err, tt.kind, tt.text)
		}
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0755)
	bad := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", file) }
	if _, err := fusebridge.Mount(bg, empty, bad, fusebridge.Options{}); !errs.Is(err, errs.Unavailable) {
		t.Errorf("Mount with no daemon = %v, want unavailable", err)
	}
}

func TestNoStaleReadsAfterChangeBehindKernel(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	for i, content := range []string{
		"a longer content than before\n",
		"short\n",
		"same len\n",
		"same LEN\n", // same size, new version
		strings.Repeat("big\n", 100000),
	} {
		e.sh(`cat $M/hello > /dev/null; stat $M/hello > /dev/null`) // fill the caches
		e.tree.Set(content, "hello")
		if got := e.sh(`cat $M/hello`); got != content {
			t.Fatalf("change %d: cat after change behind the kernel's back = %.40q, want %.40q", i, got, content)
		}
	}
	// A write through the mount is seen at once by a reader.
	e.sh(`echo mine > $M/hello; test "$(cat $M/hello)" = mine; test $(stat -c %s $M/hello) = 5`)
}

// TestUnmountWithACopyElsewhere: a process that unshared its mounts while
// the tree was mounted holds a copy of the mount, and with it the FUSE
// connection. Unmount removes the mount here, says why it does not wait
// for the copy, and returns; Wait returns too.
func TestUnmountWithACopyElsewhere(t *testing.T) {
	defer fusebridge.SetReleaseWait(100 * time.Millisecond)()
	e := mount(t, fusebridge.Options{})
	testutil.Require(t, "unshare")
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", `cat "$M/hello" && exec sleep 600`)
	holder.Env = append(os.Environ(), "M="+e.mnt)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "hello, world\n" {
		t.Fatalf("the holder does not see the mount: %q, %v", line, err)
	}
	unmounted := make(chan error, 1)
	go func() { unmounted <- e.srv.Unmount() }()
	if err := waitFor(t, unmounted, "Unmount with a copy held elsewhere"); err != nil {
		t.Fatalf("Unmount: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- e.srv.Wait() }()
	if err := waitFor(t, waited, "Wait after Unmount"); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if fusebridge.IsMountPoint(e.mnt) {
		t.Errorf("%s is still mounted here", e.mnt)
	}
	if !strings.Contains(e.log.String(), "copies of it in other mount namespaces") {
		t.Errorf("the log does not say why Unmount did not wait:\n%s", e.log)
	}
}
