package execute

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/sandbox"
)

// residentHelper returns the pid of the resident sandbox helper, the
// child of this process (standing in for the daemon) that runs `ollie
// sandbox-exec -build=B -serve`, running a stage first so that there is one.
func (f *fixture) residentHelper() int {
	f.t.Helper()
	if *oneShot {
		f.t.Skip("no resident helper with -oneshot")
	}
	f.wantOK(f.run(code("sh", "echo up")), "up\n")
	files, _ := filepath.Glob("/proc/self/task/*/children")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			args := bytes.Split(cmd, []byte{0})
			if len(args) > 3 && string(args[1]) == sandbox.HelperCommand && string(args[3]) == "-serve" {
				n, _ := strconv.Atoi(pid)
				return n
			}
		}
	}
	f.t.Fatal("no resident helper among this process's children")
	return 0
}

// A stage cannot reach the resident helper that started it: not its
// environment, memory or descriptors through /proc, not by signal or
// ptrace, not through a descriptor it was left, not by asking it for
// another process group; not even with unix sockets allowed.
func TestEscapeResidentHelper(t *testing.T) {
	requirePython(t)
	f := newFixture(t)
	f.sb.Profiles = config.BuiltinProfiles()
	sockets := f.sb.Profiles["workspace"]
	sockets.UnixSockets = true
	f.sb.Profiles["sockets"] = sockets
	pid := strconv.Itoa(f.residentHelper())
	for _, policy := range []string{"workspace", "sockets"} {
		f.policy = policy
		for _, tc := range []struct{ name, op, want string }{
			{"helper environ", "cat /proc/" + pid + "/environ", eacces},
			{"helper fds", "ls /proc/" + pid + "/fd/", eacces},
			{"helper memory", python + ` -c 'print("open", flush=True); open("/proc/` + pid + `/mem","rb")'`, eacces},
			{"helper socket by path", python + ` -c '
import socket
print("connect", flush=True)
socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).connect("/proc/` + pid + `/fd/3")'`, eacces},
			{"signal the helper", "kill -0 " + pid, eperm},
			{"ptrace the helper", ctypesCall("libc.ptrace(16, " + pid + ", 0, 0)"), eperm},
			{"descriptors beyond stdio and the script", python + ` -c '
import os, sys
def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
print("looked, found", [fd for fd in range(4, 1024) if is_open(fd)] or "none")
sys.exit(0 if [fd for fd in range(4, 1024) if is_open(fd)] else 1)'`, "looked, found none"},
			{"a socket among the descriptors", python + ` -c '
import os, stat, sys
def sock(fd):
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False
print("looked, found", [fd for fd in range(1024) if sock(fd)] or "none")
sys.exit(0 if any(sock(fd) for fd in range(1024)) else 1)'`, "looked, found none"},
			{"setpgid through the gate", python + ` -c 'import os; print("setpgid", flush=True); os.setpgid(0, 0x4f4c4c49)'`, "Function not implemented"},
			{"own process group", python + ` -c 'import os; print("setpgid", flush=True); os.setpgid(0, 0)'`, eperm},
		} {
			f.with(t).wantDenied(policy+": "+tc.name, tc.want, attempt(tc.op))
		}
	}
	if _, err := os.Stat("/proc/" + pid); err != nil {
		t.Errorf("the resident helper died: %v", err)
	}
}

// Killing the resident helper does not disturb a running stage, and the
// next stage gets a new helper.
func TestResidentHelperKilledMidRun(t *testing.T) {
	f := newFixture(t)
	helper := f.residentHelper()
	running, goOn := filepath.Join(f.tmp, "running"), filepath.Join(f.tmp, "go-on")
	var res *Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		res = f.run(steps(bash(`echo before; touch running-mark; mv running-mark ` + running + `
while [ ! -e ` + goOn + ` ]; do sleep 0.01; done; echo after`)))
	}()
	for !exists(running) {
		select {
		case <-done:
			t.Fatalf("the stage ended before it was running: %s", res)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	write(t, goOn, "")
	<-done
	f.wantOK(res, "before\nafter\n")
	if again := f.residentHelper(); again == helper {
		t.Errorf("helper %d still in use after it was killed", helper)
	}
}

// Many stages at once, from several calls and wide parallel stages,
// each with its own output.
func TestManyConcurrentStages(t *testing.T) {
	f := newFixture(t)
	const calls, width = 6, 12
	var wg sync.WaitGroup
	for c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var branches []Stage
			var want strings.Builder
			for b := range width {
				branches = append(branches, Stage{Language: "sh", Code: "echo " + strconv.Itoa(c) + "." + strconv.Itoa(b)})
				want.WriteString(strconv.Itoa(c) + "." + strconv.Itoa(b) + "\n")
			}
			res, err := f.executor().Run(t.Context(), f.spec(), []byte(steps(Stage{Parallel: branches}, Stage{Language: "sh", Code: "cat"})))
			if err != nil {
				t.Error(err)
				return
			}
			if res.Failed || string(res.Output) != want.String() {
				t.Errorf("call %d: %s", c, res)
			}
		}()
	}
	wg.Wait()
}
