package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
)

// canaryCommand makes the test binary the canary: a stage program that,
// for each NAME NR ARG0 ... ARG5 group of its arguments, prints
// "TRIED NAME", makes the call, and prints "NAME ERRNO" (0 on success).
// It is a Go program, hence multithreaded: calls that would need a
// single thread fail with EINVAL without the filter, never with the
// EPERM the tests want.
const canaryCommand = "canary"

func canaryMain(args []string) int {
	if len(args) == 3 && args[0] == "tcp" {
		port, _ := strconv.Atoi(args[2])
		return tcp(args[1], port)
	}
	if len(args) == 2 && args[0] == "forks" {
		n, _ := strconv.Atoi(args[1])
		return forks(n)
	}
	for len(args) >= 8 {
		var a [7]uintptr
		for i := range a {
			v, err := strconv.ParseUint(args[1+i], 0, 64)
			if err != nil {
				fmt.Println("bad argument", args[1+i])
				return 2
			}
			a[i] = uintptr(v)
		}
		fmt.Println("TRIED", args[0])
		r, _, e := syscall.RawSyscall6(a[0], a[1], a[2], a[3], a[4], a[5], a[6])
		if r == 0 && (a[0] == unix.SYS_CLONE) && e == 0 {
			// The child of a clone that should have failed.
			syscall.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		fmt.Println(args[0], int(e))
		args = args[8:]
	}
	return 0
}

// A try is one call for the canary and the errno it must get.
type try struct {
	name string
	nr   uintptr
	args []uintptr
	want syscall.Errno
}

func (c try) argv() []string {
	v := []string{c.name, strconv.FormatUint(uint64(c.nr), 10)}
	for i := range 6 {
		var a uintptr
		if i < len(c.args) {
			a = c.args[i]
		}
		v = append(v, strconv.FormatUint(uint64(a), 10))
	}
	return v
}

// canaryDir makes a workspace whose cwd holds a copy of the test binary,
// which the sandbox may execute there (the binary itself is under /tmp,
// which every profile hides).
func canaryDir(t *testing.T) (cwd, tmp, exe string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd, tmp = filepath.Join(root, "cwd"), filepath.Join(root, "tmp")
	for _, d := range []string{cwd, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe = filepath.Join(cwd, "canary")
	src, err := os.Open(helperExe(t))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return cwd, tmp, exe
}

// runCanary runs tries in one stage under the workspace profile and
// checks that each was tried and got its errno.
func runCanary(t *testing.T, tries []try, oneShot bool) {
	t.Helper()
	cwd, tmp, exe := canaryDir(t)
	pr := prepare(t, config.BuiltinProfiles()["workspace"], Paths{Cwd: cwd, Tmp: tmp})
	defer pr.Close()
	args := []string{"canary", canaryCommand}
	for _, c := range tries {
		args = append(args, c.argv()...)
	}
	out, ws := run(t, pr, Cmd{Path: exe, Args: args, Dir: cwd, OneShot: oneShot})
	if ws.ExitStatus() != 0 {
		t.Fatalf("canary exited %v:\n%s", ws, out)
	}
	got := map[string]string{}
	tried := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(l, "TRIED "); ok {
			tried[n] = true
		} else if n, e, ok := strings.Cut(l, " "); ok {
			got[n] = e
		}
	}
	for _, c := range tries {
		if !tried[c.name] {
			t.Errorf("%s: not tried", c.name)
			continue
		}
		if want := strconv.Itoa(int(c.want)); got[c.name] != want {
			t.Errorf("%s: errno %s, want %s (%v)", c.name, got[c.name], want, c.want)
		}
	}
}

// forks is the canary's bounded fork bomb: it forks up to n children that
// wait to be killed, and prints how many it got and the errno that
// stopped it. Bounded, so that a limit that does not hold cannot take
// the machine with it.
func forks(n int) int {
	fmt.Println("TRIED forks")
	got, errno := 0, syscall.Errno(0)
	for got < n {
		r, _, e := syscall.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
		if e != 0 {
			errno = e
			break
		}
		if r == 0 {
			// Let go of stdout, which the test reads to its end.
			syscall.RawSyscall(unix.SYS_CLOSE_RANGE, 0, ^uintptr(0), 0)
			for {
				syscall.RawSyscall(unix.SYS_PAUSE, 0, 0, 0)
			}
		}
		got++
	}
	fmt.Println("forked", got, int(errno))
	return 0
}

// tcp is the canary's network attack on 127.0.0.1:port: "connect",
// "bind", or "fastopen" (a TCP fast open sendto, which connects without
// connect). It prints TRIED and the errno of the call.
func tcp(op string, port int) int {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		fmt.Println("socket", err)
		return 1
	}
	sa := &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	fmt.Println("TRIED", op)
	switch op {
	case "connect":
		err = syscall.Connect(fd, sa)
	case "bind":
		err = syscall.Bind(fd, sa)
	case "fastopen":
		err = syscall.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, sa)
	}
	e, _ := err.(syscall.Errno)
	fmt.Println(op, int(e))
	return 0
}
