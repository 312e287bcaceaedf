package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
)

func helperExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// residentPid returns the pid of this test binary's resident helper,
// starting one if there is none.
func residentPid(t *testing.T) int {
	t.Helper()
	r, err := residentFor(helperExe(t))
	if err != nil {
		t.Fatal(err)
	}
	return r.cmd.Process.Pid
}

// killResident kills the resident helper, if there is one, and waits
// until the daemon's side has seen it go.
func killResident(t *testing.T) {
	t.Helper()
	residents.mu.Lock()
	r := residents.m[helperExe(t)]
	residents.mu.Unlock()
	if r != nil {
		r.kill()
		<-r.gone
	}
}

// prepare prepares profile prof, called "workspace", for paths; the
// caller closes it.
func prepare(t testing.TB, prof config.Profile, paths Paths) *Prepared {
	t.Helper()
	pol, err := New("workspace", prof, paths)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := pol.Prepare(false)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// run starts c with the test binary as helper and returns its stdout and
// wait status.
func run(t *testing.T, pr *Prepared, c Cmd) (string, syscall.WaitStatus) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Helper, c.Stdout = helperExe(t), w
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	p, err := pr.Start(c)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	ws, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(out), ws
}

// inspect is a program that reports what it was given: its family, its
// descriptors, credentials, environment and limits, and what becomes of
// the calls that would leave its process group.
const inspect = `
import ctypes, json, os, resource
fds = []
for fd in range(1024):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        pass
status = {}
for line in open("/proc/self/status"):
    k, v = line.split(":", 1)
    if k.startswith("Cap") or k in ("NoNewPrivs", "Seccomp"):
        status[k] = v.strip()
def errno(f):
    try:
        f()
        return 0
    except OSError as e:
        return e.errno
libc = ctypes.CDLL(None, use_errno=True)
def syscall(*args):
    r = libc.syscall(*args)
    if r == 0:
        os._exit(0)  # the child of a clone that should have failed
    return ctypes.get_errno() if r < 0 else 0
print(json.dumps({
    "ppid": os.getppid(), "pid": os.getpid(), "pgid": os.getpgid(0), "fds": fds,
    "status": status, "env": dict(os.environ),
    "limits": {n: resource.getrlimit(getattr(resource, "RLIMIT_" + n)) for n in ("CORE", "AS", "FSIZE", "NOFILE", "CPU", "NPROC")},
    "setsid": errno(os.setsid), "setpgid": errno(lambda: os.setpgid(0, 0)),
    "gate": errno(lambda: os.setpgid(0, %d)),
    "sibling": syscall(%d, 0x8000 | 17, 0, 0, 0, 0), "clone3": syscall(%d, 0, 0),
}))
`

type inspected struct {
	PPid, Pid, Pgid       int
	Fds                   []int
	Status, Env           map[string]string
	Limits                map[string][2]uint64
	Setsid, Setpgid, Gate int
	Sibling, Clone3       int
}

// TestProgramGetsNothingOfTheHelper checks, for both helpers, what a
// program inherits: its stdio and nothing else of the helper's
// descriptors (even one the daemon leaked), credentials with no way back
// (no-new-privs, seccomp, no capabilities), the environment it was given,
// the profile's limits, its own process group as the daemon's child, no
// way out of that group and no way to give the daemon children of its own.
func TestProgramGetsNothingOfTheHelper(t *testing.T) {
	python := "/usr/bin/python3" // Debian's, which test.sh installs
	if _, err := os.Stat(python); err != nil {
		skipUnlessCI(t, "no "+python)
	}
	// A descriptor the daemon leaks (no close-on-exec) reaches a freshly
	// started resident helper; it must stop there.
	leaked, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leaked)
	killResident(t)
	lim := config.Limits{Procs: 300, MemoryMB: 1024, FileMB: 10, Files: 64, CPUSecs: 100}
	pol := &Policy{Name: "t", DenyFamilies: []int{unix.AF_UNIX}, Limits: lim}
	pr := &Prepared{Policy: pol, Mode: Unsandboxed}
	env := []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "ONLY=this"}
	for _, oneShot := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneshot=%v", oneShot), func(t *testing.T) {
			before := fallbacks.Load()
			out, ws := run(t, pr, Cmd{Path: python, Args: []string{"python3", "-c", fmt.Sprintf(inspect, gatePgid, unix.SYS_CLONE, unix.SYS_CLONE3)},
				Env: env, Dir: "/", OneShot: oneShot})
			if ws.ExitStatus() != 0 {
				t.Fatalf("exit %v: %s", ws, out)
			}
			if n := fallbacks.Load() - before; n != 0 {
				t.Errorf("%d programs went through the one-shot helper", n)
			}
			var got inspected
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got.PPid != os.Getpid() || got.Pgid != got.Pid {
				t.Errorf("ppid %d pgid %d pid %d: want the daemon's child (%d), leading its own group", got.PPid, got.Pgid, got.Pid, os.Getpid())
			}
			if !slices.Equal(got.Fds, []int{0, 1, 2}) {
				t.Errorf("descriptors %v, want 0 1 2", got.Fds)
			}
			wantStatus := map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "CapInh": "0000000000000000",
				"CapPrm": "0000000000000000", "CapEff": "0000000000000000", "CapAmb": "0000000000000000"}
			if os.Geteuid() == 0 {
				wantStatus["CapBnd"] = "0000000000000000"
			}
			for k, v := range wantStatus {
				if got.Status[k] != v {
					t.Errorf("%s %q, want %q", k, got.Status[k], v)
				}
			}
			if len(got.Env) != len(env) {
				t.Errorf("environment %v, want %v", got.Env, env)
			}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				if got.Env[k] != v {
					t.Errorf("environment %v, want %v", got.Env, env)
				}
			}
			for name, res := range map[string]int{"CORE": unix.RLIMIT_CORE, "AS": unix.RLIMIT_AS, "FSIZE": unix.RLIMIT_FSIZE,
				"NOFILE": unix.RLIMIT_NOFILE, "CPU": unix.RLIMIT_CPU, "NPROC": unix.RLIMIT_NPROC} {
				var own unix.Rlimit
				unix.Getrlimit(res, &own)
				want := map[string]uint64{"CORE": 0, "AS": 1024 << 20, "FSIZE": 10 << 20, "NOFILE": 64, "CPU": 100, "NPROC": 300}[name]
				want = min(want, own.Max)
				if got.Limits[name] != [2]uint64{want, want} {
					t.Errorf("limit %s %v, want %d", name, got.Limits[name], want)
				}
			}
			if got.Setsid != int(unix.EPERM) || got.Setpgid != int(unix.EPERM) {
				t.Errorf("setsid: errno %d, setpgid: errno %d, want EPERM", got.Setsid, got.Setpgid)
			}
			if got.Gate == 0 {
				t.Errorf("setpgid to the gate's group succeeded")
			}
			if got.Sibling == 0 || got.Clone3 != int(unix.ENOSYS) {
				t.Errorf("clone(CLONE_PARENT): errno %d, clone3: errno %d, want failures, ENOSYS for clone3", got.Sibling, got.Clone3)
			}
		})
	}
}

// A program started by the resident helper is the daemon's child: the
// helper dying under it changes nothing.
func TestResidentKilledWhileProgramRuns(t *testing.T) {
	pr := &Prepared{Policy: &Policy{}, Mode: Unsandboxed}
	in, feed, _ := os.Pipe()
	r, w, _ := os.Pipe()
	defer r.Close()
	before := fallbacks.Load()
	p, err := pr.Start(Cmd{Helper: helperExe(t), Path: "/bin/cat", Args: []string{"cat"}, Stdin: in, Stdout: w, Stderr: os.Stderr})
	in.Close()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if fallbacks.Load() != before {
		t.Fatal("cat went through the one-shot helper")
	}
	killResident(t)
	fmt.Fprintln(feed, "still here")
	feed.Close()
	out, _ := io.ReadAll(r)
	ws, err := p.Wait()
	if string(out) != "still here\n" || err != nil || ws.ExitStatus() != 0 {
		t.Errorf("got %q, %v %v", out, ws, err)
	}
}

func TestResidentRestarts(t *testing.T) {
	pr := &Prepared{Policy: &Policy{}, Mode: Unsandboxed}
	before := residentPid(t)
	killResident(t)
	out, ws := run(t, pr, Cmd{Path: "/bin/echo", Args: []string{"echo", "again"}})
	if out != "again\n" || ws.ExitStatus() != 0 {
		t.Errorf("after a restart: %q %v", out, ws)
	}
	if after := residentPid(t); after == before {
		t.Errorf("the resident helper %d was not replaced", before)
	}
}

// Many programs at once, with the resident helper killed now and then
// under them: each either gets through it or falls back to the one-shot
// helper, all of them run, and none is left behind.
func TestResidentConcurrentWithKills(t *testing.T) {
	pr := &Prepared{Policy: &Policy{DenyFamilies: []int{unix.AF_UNIX}}, Mode: Unsandboxed}
	const workers, each, kills = 16, 16, 3
	before := fallbacks.Load()
	var finished atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				want := fmt.Sprintf("%d-%d\n", w, i)
				out, ws := run(t, pr, Cmd{Path: "/bin/echo", Args: []string{"echo", strings.TrimSpace(want)}})
				if out != want || ws.ExitStatus() != 0 {
					t.Errorf("got %q %v, want %q", out, ws, want)
				}
				finished.Add(1)
			}
		}()
	}
	for k := 1; k <= kills; k++ {
		for finished.Load() < int64(k*workers*each/(kills+1)) {
			time.Sleep(time.Millisecond)
		}
		killResident(t)
	}
	wg.Wait()
	t.Logf("%d of %d programs fell back to the one-shot helper", fallbacks.Load()-before, workers*each)
	if left := children(t, residentPid(t)); len(left) > 0 {
		t.Errorf("children left behind: %v", left)
	}
}

// children lists this process's children other than except.
func children(t *testing.T, except int) []string {
	t.Helper()
	files, _ := filepath.Glob("/proc/self/task/*/children")
	var out []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(b)) {
			if pid != strconv.Itoa(except) {
				cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
				out = append(out, pid+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	}
	return out
}

// Confinement never carries over from one program to the next: each
// thread of the resident helper starts one program, so a program under a
// lax policy after one under a strict policy gets the lax one.
func TestResidentThreadsStartOneProgram(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd, tmp, secret := filepath.Join(root, "cwd"), filepath.Join(root, "tmp"), filepath.Join(root, "secret")
	for _, d := range []string{cwd, tmp} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(secret, []byte("s3cret"), 0o644)
	strict := prepare(t, config.BuiltinProfiles()["workspace"], Paths{Cwd: cwd, Tmp: tmp})
	defer strict.Close()
	lax := &Prepared{Policy: &Policy{DenyFamilies: strict.Policy.DenyFamilies}, Mode: Unsandboxed}
	for i := range 10 {
		for _, c := range []struct {
			pr   *Prepared
			want string
		}{{strict, ""}, {lax, "s3cret"}} {
			out, _ := run(t, c.pr, Cmd{Path: "/bin/cat", Args: []string{"cat", secret}, Dir: cwd, Stderr: devNull(t)})
			if out != c.want {
				t.Fatalf("round %d, %s: read %q, want %q", i, c.pr.Mode, out, c.want)
			}
		}
	}
}

func devNull(t *testing.T) *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
