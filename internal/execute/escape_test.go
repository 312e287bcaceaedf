package execute

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/sandbox"
)

// attempt is a bash snippet that tries one way out of the sandbox. It
// prints the canary TRIED, runs op with its error output on stdout, then
// prints "denied" when op failed and "ESCAPED" when it worked.
func attempt(op string) Stage {
	return bash("echo TRIED\nif { " + op + "\n} 2>&1\nthen echo ESCAPED; else echo denied; fi")
}

// python is Debian's python3, which the ctypes attacks need: test.sh
// installs it. A pyenv shim or a missing interpreter must not make them
// pass without attacking, so the tests fail without it.
const python = "/usr/bin/python3"

func requirePython(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("the attacks in python need %s (apt-get install python3): %v", python, err)
	}
}

// ctypesCall is a python program that prints TRIED, makes one libc call
// and prints the error it got, so that a python that cannot start, or a
// call that never ran, cannot pass for a denial.
func ctypesCall(call string) string {
	return python + ` -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = os.getpid()
print("TRIED", flush=True)
r = ` + call + `
if r == 0 and os.getpid() != pid:
    os._exit(0)  # the child of a clone that should have failed
e = ctypes.get_errno() if r < 0 else 0
print(os.strerror(e) if e else "worked", flush=True)
sys.exit(0 if r >= 0 else 1)'`
}

// cloneParent is how clone(CLONE_PARENT) fails: at the resident helper's
// gate, whose listener is gone once the program runs, with ENOSYS; in the
// one-shot helper's plain filter with EPERM.
func cloneParent() string {
	if *oneShot {
		return eperm
	}
	return "Function not implemented"
}

// Denials, as the attack's own program reports them.
const (
	eacces = "Permission denied"
	eperm  = "Operation not permitted"
	enoent = "No such file or directory"
)

// wantDenied runs an attempt and requires positive evidence that it ran
// and failed with the expected error: an escape that works fails the
// test, it is never skipped, and an attempt that did not run fails it too.
func (f *fixture) wantDenied(name, want string, st ...Stage) {
	f.t.Helper()
	res := f.run(steps(st...))
	f.noSecret(res)
	out := string(res.Output)
	if res.Failed || !strings.HasPrefix(out, "TRIED\n") || !strings.HasSuffix(out, "\ndenied\n") || !strings.Contains(out, want) {
		f.t.Errorf("%s: want TRIED, %q and denied, got:\n%s", name, want, res)
	}
}

func TestEscapeFiles(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(f.root, "outside")
	// A spare session directory (internal/session/spare.go): what a stage
	// plants in one would be the next session's chat or history.
	spare := filepath.Join(f.dataDir, "s", ".spare-0")
	write(t, filepath.Join(spare, "chat"), "")
	planted := filepath.Join(f.dataDir, "s", ".spare-planted")
	// The agents and prompt parts the daemon keeps while a/ and p/ are
	// unchanged (agent.keptFile): a stage that could write there would
	// write every later system prompt.
	part := filepath.Join(f.cfgDir, "p", "base.md")
	write(t, part, "the shipped prompt\n")
	agent := filepath.Join(f.cfgDir, "a", "planted.json")
	os.MkdirAll(filepath.Dir(agent), 0o700)
	// The manifest of the installed defaults (defaults.Install): its
	// .checked entry lets a start skip the shipped files, and its sums
	// say which copies are the user's. A stage that rewrote it would have
	// the next start keep a planted tool as the user's edit.
	manifest := filepath.Join(f.cfgDir, ".ollie-defaults.json")
	write(t, manifest, "{}\n")
	for _, tc := range []struct{ name, op, want string }{
		{"read ssh key", "cat " + f.sshKey, eacces},
		{"read aws credentials", "cat " + f.awsCreds, eacces},
		{"list home", "ls " + f.home, eacces},
		{"read ollie config", "cat " + f.cfgKey, eacces},
		{"read another session", "cat " + f.otherChat, eacces},
		{"list sessions", "ls " + filepath.Dir(f.otherChat), eacces},
		{"write another session's tmp", "mkdir -p " + filepath.Join(f.dataDir, "tmp", "s2"), eacces},
		{"write a spare session directory", "echo 'user: planted' >> " + filepath.Join(spare, "chat"), eacces},
		{"make a spare session directory", "mkdir " + planted, eacces},
		{"write outside cwd", "echo x > " + outside, eacces},
		{"write /etc", "echo x > /etc/ollie-escape", eacces},
		{"symlink to /etc, write through it", "ln -s /etc etc-link && echo x > etc-link/ollie-escape", eacces},
		{"symlink to the config", "ln -s " + f.cfgDir + " cfg-link && cat cfg-link/ollie.json", eacces},
		{"rewrite a prompt part", "echo 'obey the stage' > " + part, eacces},
		{"plant an agent", "echo '{}' > " + agent, eacces},
		{"rewrite the defaults' manifest", `echo '{".checked": "forged"}' > ` + manifest, eacces},
		{"symlink to the key", "ln -s " + f.sshKey + " key-link && cat key-link", eacces},
		// Landlock refuses a link that would widen the file's access.
		{"hard link the key", "ln " + f.sshKey + " stolen && cat stolen", "Invalid cross-device link"},
		{"move the key", "mv " + f.sshKey + " ./stolen2", eacces},
		{"key through /proc/self/root", "cat /proc/self/root" + f.sshKey, eacces},
		{"shared memory", "echo x > /dev/shm/ollie-escape", eacces},
		{"system tmp", "echo x > /tmp/ollie-escape-" + strconv.Itoa(os.Getpid()), eacces},
		{"read /etc/shadow", "cat /etc/shadow", eacces},
		{"chown as root", "touch owned && chown 65534 owned", eperm},
	} {
		f.with(t).wantDenied(tc.name, tc.want, attempt(tc.op))
	}
	for _, p := range []string{outside, "/etc/ollie-escape", filepath.Join(f.dataDir, "tmp", "s2"), planted, agent} {
		if exists(p) {
			t.Errorf("%s was created", p)
		}
	}
	if !exists(f.sshKey) {
		t.Error("the key was moved")
	}
	if b, err := os.ReadFile(filepath.Join(spare, "chat")); err != nil || len(b) != 0 {
		t.Errorf("the spare's chat holds %q (%v)", b, err)
	}
	if b, err := os.ReadFile(manifest); err != nil || string(b) != "{}\n" {
		t.Errorf("the defaults' manifest holds %q (%v)", b, err)
	}
	if b, err := os.ReadFile(part); err != nil || string(b) != "the shipped prompt\n" {
		t.Errorf("the prompt part holds %q (%v)", b, err)
	}
}

// TestEscapeRawDisks reads every block device from a stage. A machine
// with none gets a loop device, attached to a file, which the test reads
// from outside first: a denial of a device that cannot be read anyway
// would prove nothing.
func TestEscapeRawDisks(t *testing.T) {
	f := newFixture(t)
	dev := loopDevice(t)
	if b, err := os.ReadFile(dev); err != nil || len(b) == 0 {
		t.Fatalf("%s is not readable outside the sandbox: %v", dev, err)
	}
	ents, _ := os.ReadDir("/dev")
	n := 0
	for _, e := range ents {
		if e.Type()&os.ModeDevice != 0 && e.Type()&os.ModeCharDevice == 0 {
			n++
			f.wantDenied("read /dev/"+e.Name(), eacces, attempt("head -c 512 /dev/"+e.Name()+" >/dev/null"))
		}
	}
	if n == 0 {
		t.Fatal("no block device was tried")
	}
}

// loopDevice attaches a loop device to a file of known content and
// returns it. It needs root; without root there is no way to make a
// readable block device, and the test fails.
func loopDevice(t *testing.T) string {
	t.Helper()
	back := filepath.Join(t.TempDir(), "disk")
	if err := os.WriteFile(back, []byte(strings.Repeat("DISK", 1024)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", back).CombinedOutput()
	if err != nil {
		t.Fatalf("no block device to attack: losetup: %v %s (run as root)", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	return dev
}

func TestEscapeDaemonProcess(t *testing.T) {
	requirePython(t)
	f := newFixture(t)
	pid := strconv.Itoa(os.Getpid()) // the test process stands in for the daemon
	for _, tc := range []struct{ name, op, want string }{
		{"daemon environ", "cat /proc/" + pid + "/environ", eacces},
		{"daemon root", "cat /proc/" + pid + "/root" + f.sshKey, eacces},
		{"daemon cwd", "ls /proc/" + pid + "/cwd/", eacces},
		{"daemon fds", "ls /proc/" + pid + "/fd/", eacces},
		{"daemon cmdline", "cat /proc/" + pid + "/cmdline", eacces},
		{"daemon memory", python + ` -c 'print("open", flush=True); open("/proc/` + pid + `/mem","rb")'`, eacces},
		{"signal the daemon", "kill -WINCH " + pid, eperm},
		{"signal probe", "kill -0 " + pid, eperm},
		{"signal init", "kill -0 1", eperm},
		{"ptrace the daemon", ctypesCall("libc.ptrace(16, " + pid + ", 0, 0)"), eperm},
		{"list processes", "ls /proc/" + pid, eacces},
		{"a child of the daemon, which it would never reap",
			ctypesCall("libc.syscall(" + strconv.Itoa(unix.SYS_CLONE) + ", 0x8000 | 17, 0, 0, 0, 0)"), cloneParent()},
		{"a user namespace", ctypesCall("libc.unshare(0x10000000)"), eperm},
		{"a mount namespace", ctypesCall("libc.unshare(0x20000)"), eperm},
		{"bpf", ctypesCall("libc.syscall(" + strconv.Itoa(unix.SYS_BPF) + ", 0, 0, 0)"), eperm},
		{"perf_event_open", ctypesCall("libc.syscall(" + strconv.Itoa(unix.SYS_PERF_EVENT_OPEN) + ", 0, 0, -1, -1, 0)"), eperm},
	} {
		f.with(t).wantDenied(tc.name, tc.want, attempt(tc.op))
	}
}

func TestEscapeSockets(t *testing.T) {
	requirePython(t)
	f := newFixture(t)
	sock := filepath.Join(f.runtimeDir, "ollie.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	abstract := "@ollie-test-" + strconv.Itoa(os.Getpid())
	la, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	connect := func(addr string) string {
		return python + ` -c '
import socket
print("socket", flush=True)
s = socket.socket(socket.AF_UNIX)
s.connect("` + strings.Replace(addr, "@", `\0`, 1) + `")'`
	}
	f.wantDenied("daemon socket", eacces, attempt(connect(sock)))
	f.wantDenied("abstract socket", eacces, attempt(connect(abstract)))
	f.wantDenied("socketpair-free unix datagram", eacces, attempt(python+` -c 'import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)'`))
	// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
	f.wantDenied("session keyring", eperm, attempt(ctypesCall("libc.syscall("+strconv.Itoa(unix.SYS_KEYCTL)+", 0, -3, 0)")))
}

func TestEscapeThroughStages(t *testing.T) {
	requirePython(t)
	f := newFixture(t)
	write(t, filepath.Join(f.tools, "steal"), "#!/bin/sh\necho TRIED\nif cat "+f.sshKey+" 2>&1\nthen echo ESCAPED; else echo denied; fi\n")
	f.wantDenied("parallel branch", eacces, Stage{Parallel: []Stage{attempt("cat " + f.sshKey)}})
	res := f.run(steps(Stage{Parallel: []Stage{bash("echo fine"), attempt("cat " + f.cfgKey)}}))
	f.noSecret(res)
	if out := string(res.Output); !strings.HasPrefix(out, "fine\nTRIED\n") || !strings.HasSuffix(out, eacces+"\ndenied\n") {
		t.Errorf("parallel: %s", res)
	}
	f.wantDenied("tool", eacces, Stage{Tool: "steal"})
	f.wantDenied("python", eacces, Stage{Language: "python3", Code: `
import sys
print("TRIED")
try:
    open("` + f.sshKey + `").read()
    print("ESCAPED")
except PermissionError as e:
    print(e.strerror)
    print("denied")`})
	f.wantDenied("perl", eacces, Stage{Language: "perl", Code: `print "TRIED\n"; print(open(my $fh, "<", "` + f.awsCreds + `") ? "ESCAPED\n" : "$!\ndenied\n")`})
}

func TestSessionDirsThatExposeSecrets(t *testing.T) {
	f := newFixture(t)
	ex := f.executor()
	mkdir(t, filepath.Join(filepath.Dir(f.sshKey), "sub"))
	for _, tc := range []struct{ name, cwd, tmp, want string }{
		{"cwd is home", f.home, f.tmp, "contains protected"},
		{"cwd is /", "/", f.tmp, "contains protected"},
		{"cwd is ~/.ssh", filepath.Dir(f.sshKey), f.tmp, "contains protected"},
		{"cwd in ~/.ssh", filepath.Join(filepath.Dir(f.sshKey), "sub"), f.tmp, "is inside protected"},
		{"tmp is home", f.cwd, f.home, "contains protected"},
		{"cwd contains the config", filepath.Dir(f.cfgDir), f.tmp, "contains protected"},
	} {
		spec := f.spec()
		spec.Cwd, spec.Tmp = tc.cwd, tc.tmp
		_, err := ex.Run(t.Context(), spec, []byte(code("sh", "cat "+f.sshKey)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestProfiles(t *testing.T) {
	f := newFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	dial := attempt(python + ` -c 'import socket; socket.create_connection(("127.0.0.1", ` + port + `))'`)
	res := f.run(steps(dial)) // workspace: the network is allowed
	if strings.TrimSpace(string(res.Output)) != "TRIED\nESCAPED" {
		t.Fatalf("workspace cannot connect: %s", res)
	}
	f.policy = "offline"
	f.wantDenied("offline tcp", eacces, dial)
	f.wantDenied("offline udp", eacces, attempt(python+` -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)'`))
	f.policy = "readonly"
	f.wantDenied("readonly cwd", eacces, attempt("echo x > written"))
	res = f.run(steps(bash("echo scratch > $TMPDIR/x && cat $TMPDIR/x")))
	f.wantOK(res, "scratch\n")
}

// guarded holds the ports TestEscapeDaemonPorts guards, made once.
var guarded struct {
	once            sync.Once
	daemon, backend string
	err             error
}

func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// TestEscapeDaemonPorts: a stage under the default profile, which has the
// network, cannot connect to or bind the daemon's TCP port, nor bind a
// local backend's port while it is free (it would catch the key sent with
// the next request), and can still connect elsewhere.
func TestEscapeDaemonPorts(t *testing.T) {
	requirePython(t)
	f := newFixture(t)
	// The guarded ports are fixed for the life of the process (the
	// guard is set up once), so the daemon's and the backend's ports are
	// the same in every run of this test (-count).
	guarded.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			guarded.err = err
			return
		}
		go acceptAndClose(l) // open for the rest of the process, like a daemon's port
		guarded.daemon = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		b, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			guarded.err = err
			return
		}
		guarded.backend = strconv.Itoa(b.Addr().(*net.TCPAddr).Port)
		b.Close() // the backend is down, its port free
	})
	if guarded.err != nil {
		t.Fatal(guarded.err)
	}
	daemon, backend := guarded.daemon, guarded.backend
	ol, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ol.Close() })
	go acceptAndClose(ol)
	other := strconv.Itoa(ol.Addr().(*net.TCPAddr).Port)
	port := func(s string) uint16 { n, _ := strconv.Atoi(s); return uint16(n) }
	f.ports = sandbox.Guard{Connect: []uint16{port(daemon)}, Bind: []uint16{port(backend)}}
	sock := func(op, p string) string {
		return python + ` -c '
import socket
s = socket.socket()
print("` + op + `", flush=True)
s.` + op + `(("127.0.0.1", ` + p + `))'`
	}
	f.wantDenied("connect to the daemon's port", eperm, attempt(sock("connect", daemon)))
	f.wantDenied("bind the daemon's port", eperm, attempt(sock("bind", daemon)))
	f.wantDenied("bind a backend's free port", eperm, attempt(sock("bind", backend)))
	res := f.run(steps(attempt(sock("connect", other))))
	if out := string(res.Output); out != "TRIED\nconnect\nESCAPED\n" {
		t.Errorf("connect to another port: %s", res)
	}
}
