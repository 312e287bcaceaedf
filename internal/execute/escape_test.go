package execute

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// attempt is a bash snippet that tries one way out of the sandbox; it
// prints "denied" when the operation fails, "ESCAPED" when it works.
func attempt(op string) Stage {
	return bash("if " + op + "\nthen echo ESCAPED; else echo denied; fi")
}

// wantDenied runs an attempt and requires positive evidence that it ran
// and failed: an escape that works fails the test, it is never skipped.
func (f *fixture) wantDenied(name string, st ...Stage) {
	f.t.Helper()
	res := f.run(steps(st...))
	f.noSecret(res)
	if res.Failed || strings.TrimSpace(string(res.Output)) != "denied" {
		f.t.Errorf("%s: want denied, got:\n%s", name, res)
	}
}

func TestEscapeFiles(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(f.root, "outside")
	for _, tc := range []struct{ name, op string }{
		{"read ssh key", "cat " + f.sshKey},
		{"read aws credentials", "cat " + f.awsCreds},
		{"list home", "ls " + f.home},
		{"read ollie config", "cat " + f.cfgKey},
		{"read another session", "cat " + f.otherChat},
		{"list sessions", "ls " + filepath.Dir(f.otherChat)},
		{"write another session's tmp", "mkdir -p " + filepath.Join(f.dataDir, "tmp", "s2")},
		{"write outside cwd", "echo x > " + outside},
		{"write /etc", "echo x > /etc/ollie-escape"},
		{"symlink to /etc, write through it", "ln -s /etc etc-link && echo x > etc-link/ollie-escape"},
		{"symlink to the config", "ln -s " + f.cfgDir + " cfg-link && cat cfg-link/ollie.json"},
		{"symlink to the key", "ln -s " + f.sshKey + " key-link && cat key-link"},
		{"hard link the key", "ln " + f.sshKey + " stolen && cat stolen"},
		{"move the key", "mv " + f.sshKey + " ./stolen2"},
		{"key through /proc/self/root", "cat /proc/self/root" + f.sshKey},
		{"shared memory", "echo x > /dev/shm/ollie-escape"},
		{"system tmp", "echo x > /tmp/ollie-escape-" + strconv.Itoa(os.Getpid())},
		{"read /etc/shadow", "test -e /etc/shadow && cat /etc/shadow"},
		{"chown as root", "touch owned && chown 65534 owned"},
	} {
		f.with(t).wantDenied(tc.name, attempt(tc.op))
	}
	for _, p := range []string{outside, "/etc/ollie-escape", filepath.Join(f.dataDir, "tmp", "s2")} {
		if exists(p) {
			t.Errorf("%s was created", p)
		}
	}
	if !exists(f.sshKey) {
		t.Error("the key was moved")
	}
}

func TestEscapeRawDisks(t *testing.T) {
	f := newFixture(t)
	ents, _ := os.ReadDir("/dev")
	n := 0
	for _, e := range ents {
		if e.Type()&os.ModeDevice != 0 && e.Type()&os.ModeCharDevice == 0 {
			n++
			f.wantDenied("read /dev/"+e.Name(), attempt("head -c 512 /dev/"+e.Name()+" >/dev/null"))
		}
	}
	t.Logf("%d block devices tried", n)
}

func TestEscapeDaemonProcess(t *testing.T) {
	f := newFixture(t)
	pid := strconv.Itoa(os.Getpid()) // the test process stands in for the daemon
	for _, tc := range []struct{ name, op string }{
		{"daemon environ", "cat /proc/" + pid + "/environ"},
		{"daemon root", "cat /proc/" + pid + "/root" + f.sshKey},
		{"daemon cwd", "ls /proc/" + pid + "/cwd/"},
		{"daemon fds", "ls /proc/" + pid + "/fd/"},
		{"daemon cmdline", "cat /proc/" + pid + "/cmdline"},
		{"daemon memory", `python3 -c 'open("/proc/` + pid + `/mem","rb")'`},
		{"signal the daemon", "kill -WINCH " + pid},
		{"signal probe", "kill -0 " + pid},
		{"signal init", "kill -0 1"},
		{"ptrace the daemon", `python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.ptrace(16, ` + pid + `, 0, 0) == 0 else 1)'`},
		{"list processes", "ls /proc/" + pid},
		{"a child of the daemon, which it would never reap", `python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None)
r = libc.syscall(` + strconv.Itoa(unix.SYS_CLONE) + `, 0x8000 | 17, 0, 0, 0, 0)
if r == 0:
    os._exit(0)
sys.exit(0 if r > 0 else 1)'`},
	} {
		f.with(t).wantDenied(tc.name, attempt(tc.op))
	}
}

func TestEscapeSockets(t *testing.T) {
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
		return `python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
s.connect("` + strings.Replace(addr, "@", `\0`, 1) + `")'`
	}
	f.wantDenied("daemon socket", attempt(connect(sock)))
	f.wantDenied("abstract socket", attempt(connect(abstract)))
	f.wantDenied("socketpair-free unix datagram", attempt(`python3 -c 'import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)'`))
	if runtime.GOARCH == "amd64" {
		// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
		f.wantDenied("session keyring", attempt(`python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None)
sys.exit(0 if libc.syscall(250, 0, -3, 0) >= 0 else 1)'`))
	}
}

func TestEscapeThroughStages(t *testing.T) {
	f := newFixture(t)
	write(t, filepath.Join(f.tools, "steal"), "#!/bin/sh\nif cat "+f.sshKey+"\nthen echo ESCAPED; else echo denied; fi\n")
	f.wantDenied("parallel branch", Stage{Parallel: []Stage{attempt("cat " + f.sshKey)}})
	res := f.run(steps(Stage{Parallel: []Stage{bash("echo fine"), attempt("cat " + f.cfgKey)}}))
	f.noSecret(res)
	if string(res.Output) != "fine\ndenied\n" {
		t.Errorf("parallel: %s", res)
	}
	f.wantDenied("tool", Stage{Tool: "steal"})
	f.wantDenied("python", Stage{Language: "python3", Code: `
try:
    open("` + f.sshKey + `").read()
    print("ESCAPED")
except PermissionError:
    print("denied")`})
	f.wantDenied("perl", Stage{Language: "perl", Code: `print(open(my $fh, "<", "` + f.awsCreds + `") ? "ESCAPED\n" : "denied\n")`})
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
	dial := attempt(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", ` + port + `))'`)
	res := f.run(steps(dial)) // workspace: the network is allowed
	if strings.TrimSpace(string(res.Output)) != "ESCAPED" {
		t.Fatalf("workspace cannot connect: %s", res)
	}
	f.policy = "offline"
	f.wantDenied("offline tcp", dial)
	f.wantDenied("offline udp", attempt(`python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)'`))
	f.policy = "readonly"
	f.wantDenied("readonly cwd", attempt("echo x > written"))
	res = f.run(steps(bash("echo scratch > $TMPDIR/x && cat $TMPDIR/x")))
	f.wantOK(res, "scratch\n")
}
