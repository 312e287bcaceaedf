package who

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

func TestResolveSelfAndUser(t *testing.T) {
	var r Registry
	if p := r.Resolve(os.Getpid()); p != nil {
		t.Fatalf("this process resolved to %+v, want the user", p)
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if nnp, ok := NoNewPrivs(cmd.Process.Pid); !ok || nnp {
		t.Fatalf("NoNewPrivs of a plain child = %v, %v", nnp, ok)
	}
	if p := r.Resolve(cmd.Process.Pid); p != nil {
		t.Fatalf("a plain child resolved to %+v, want the user", p)
	}
}

func TestResolveRegisteredGroup(t *testing.T) {
	var r Registry
	// A group leader and a grandchild that keeps its group: the stage
	// and what it forked.
	cmd := exec.Command("sh", "-c", "sleep 10 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	pg, ok := Pgid(cmd.Process.Pid)
	if !ok || pg != cmd.Process.Pid {
		t.Fatalf("Pgid = %d, %v; want %d", pg, ok, cmd.Process.Pid)
	}
	remove := r.Add(pg, "s1")
	if p := r.Resolve(cmd.Process.Pid); p == nil || p.Session != "s1" {
		t.Fatalf("registered leader resolved to %+v", p)
	}
	remove()
	if p := r.Resolve(cmd.Process.Pid); p != nil {
		t.Fatalf("unregistered plain group resolved to %+v, want the user", p)
	}
}

func TestResolveGone(t *testing.T) {
	var r Registry
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if p := r.Resolve(cmd.Process.Pid); p == nil || p.Session != "" {
		t.Fatalf("a gone process resolved to %+v, want a stage of no session", p)
	}
}
