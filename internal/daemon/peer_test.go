package daemon_test

import (
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/testutil"
	"ollie.dev/ollie/internal/who"
)

// client9p is a minimal 9P client in python: the attacker's own code,
// not ours. It waits for a line on stdin (so the test can register its
// process group as a stage first), then tries what a stage would.
const client9p = `import os, socket, struct, sys
sys.stdin.readline()
def msg(t, tag, body): return struct.pack("<IBH", 7 + len(body), t, tag) + body
def s9(x): x = x.encode(); return struct.pack("<H", len(x)) + x
def rpc(c, t, body):
    c.sendall(msg(t, 1, body))
    n = struct.unpack("<I", c.recv(4))[0]
    b = b""
    while len(b) < n - 4: b += c.recv(n - 4 - len(b))
    if b[0] == 107: return "error: " + b[5:5 + struct.unpack("<H", b[3:5])[0]].decode()
    return "ok"
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
print("version", rpc(c, 100, struct.pack("<I", 8192) + s9("9P2000")))
print("TRIED attach-as-pid", rpc(c, 104, struct.pack("<II", 1, 0xffffffff) + s9("x") + s9("pid=1")))
print("attach", rpc(c, 104, struct.pack("<II", 2, 0xffffffff) + s9("x") + s9("")))
print("walk", rpc(c, 110, struct.pack("<IIH", 2, 3, 2) + s9("a") + s9("default.json")))
print("TRIED open-agent", rpc(c, 112, struct.pack("<IB", 3, 1)))
print("walk2", rpc(c, 110, struct.pack("<IIH", 2, 4, 1) + s9("help")))
print("open-help", rpc(c, 112, struct.pack("<IB", 4, 0)))
`

// A process the executor registered as a stage is served as that stage on
// the daemon's own socket, whatever it sends: the daemon asks the kernel
// who connected (SO_PEERCRED). The same client unregistered is the user.
func TestStagePeerOnSocket(t *testing.T) {
	testutil.Require(t, "python3")
	cfg := testutil.Home(t, nil)
	testutil.Daemon(t, cfg, daemon.Options{})
	run := func(stage bool) string {
		cmd := exec.Command("python3", "-c", client9p, cfg.Socket)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		in, _ := cmd.StdinPipe()
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if stage {
			defer who.Stages.Add(cmd.Process.Pid, "some-session")()
		}
		io.WriteString(in, "go\n")
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("client: %v\n%s", err, out.String())
		}
		return out.String()
	}
	out := run(true)
	for _, want := range []string{"TRIED attach-as-pid error: permission denied: a sandboxed caller cannot attach on behalf",
		"TRIED open-agent error: permission denied: sandboxed code may not write a/default.json", "open-help ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("as a stage, output lacks %q:\n%s", want, out)
		}
	}
	out = run(false)
	if !strings.Contains(out, "TRIED open-agent ok") {
		t.Errorf("as the user, the agent should open:\n%s", out)
	}
}
