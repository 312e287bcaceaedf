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

// A process the executor registered as a stage is served as that stage on
// the daemon's own socket, whatever it sends: the daemon asks the kernel
// who connected (SO_PEERCRED). The same client unregistered is the user.
func TestStagePeerOnSocket(t *testing.T) {
	testutil.Require(t, "python3")
	cfg := testutil.Home(t, nil)
	testutil.Daemon(t, cfg, daemon.Options{})
	run := func(stage bool) string {
		cmd := exec.Command("python3", "-c", testutil.Attack9P, cfg.Socket, "wait")
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
