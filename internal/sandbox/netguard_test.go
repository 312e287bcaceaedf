package sandbox

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/config"
)

// TestPortGuard attacks, from a real stage, a port the daemon listens on
// (connect and TCP fast open), and a free port of a backend (bind), and
// checks that a port nobody protects still works.
func TestPortGuard(t *testing.T) {
	if ABI() == 0 {
		skipUnlessCI(t, "no landlock")
	}
	listen := func() (net.Listener, uint16) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return l, uint16(l.Addr().(*net.TCPAddr).Port)
	}
	_, daemonPort := listen()
	_, freePort := listen()
	// A backend's port that is free: listen, read the port back, close.
	l, backendPort := listen()
	l.Close()
	if os.Getuid() == 0 {
		if _, err := guardDir(Guard{Connect: []uint16{daemonPort}, Bind: []uint16{backendPort}}); err != nil {
			t.Fatalf("root, and no port guard: %v", err)
		}
	}
	cwd, tmp, exe := canaryDir(t)
	pol, err := New("workspace", config.BuiltinProfiles()["workspace"], Paths{Cwd: cwd, Tmp: tmp})
	if err != nil {
		t.Fatal(err)
	}
	pol.Guard = Guard{Connect: []uint16{daemonPort}, Bind: []uint16{backendPort}}
	pr, err := pol.Prepare(false)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	for _, tc := range []struct {
		op   string
		port uint16
		want unix.Errno
	}{
		{"connect", daemonPort, unix.EPERM},
		{"fastopen", daemonPort, unix.EPERM},
		{"bind", daemonPort, unix.EPERM},
		{"bind", backendPort, unix.EPERM},
		{"connect", freePort, 0},
	} {
		for _, oneShot := range []bool{false, true} {
			port := strconv.Itoa(int(tc.port))
			out, ws := run(t, pr, Cmd{Path: exe, Args: []string{"canary", canaryCommand, "tcp", tc.op, port}, Dir: cwd, OneShot: oneShot})
			want := fmt.Sprintf("TRIED %s\n%s %d\n", tc.op, tc.op, tc.want)
			if ws.ExitStatus() != 0 || out != want {
				t.Errorf("oneshot=%v, %s %s: got %q, want %q", oneShot, tc.op, port, out, strings.TrimSpace(want))
			}
		}
	}
}

func TestNarrowBind(t *testing.T) {
	g := Guard{Connect: []uint16{5640}, Bind: []uint16{11434}}
	for _, tc := range []struct {
		name string
		net  Net
		want Net
	}{
		{"tcp left alone", Net{}, Net{Restrict: true, BindOnly: true, Bind: []uint16{0}}},
		{"own bind list", Net{Restrict: true, Connect: []uint16{443}, Bind: []uint16{8080, 11434, 5640}},
			Net{Restrict: true, Connect: []uint16{443}, Bind: []uint16{8080}}},
		{"only guarded ports", Net{Restrict: true, Bind: []uint16{11434}}, Net{Restrict: true, Bind: []uint16{0}}},
		{"no network", Net{Restrict: true}, Net{Restrict: true}},
	} {
		p := &Policy{Net: tc.net, Guard: g}
		got := narrowBind(p).Net
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
		if fmt.Sprint(p.Net) != fmt.Sprint(tc.net) {
			t.Errorf("%s: the policy itself changed", tc.name)
		}
	}
}
