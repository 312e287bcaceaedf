// Package testutil starts real ollie components for tests: a daemon on a
// real unix socket with its directories in a temporary home, and 9P
// clients attached to it.
package testutil

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/mountinfo"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/sandbox"
)

// Home makes a temporary home and returns the configuration ollie would
// compute for it, with env adding to or overriding the variables.
// The runtime directory is short, to keep the socket path under the
// 108-byte limit of unix socket names.
func Home(t testing.TB, env map[string]string) *config.Config {
	t.Helper()
	home := t.TempDir()
	rt, err := os.MkdirTemp("", "ol")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	vars := map[string]string{"HOME": home, "XDG_RUNTIME_DIR": rt}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(config.Env{Get: func(k string) string { return vars[k] }, UID: os.Getuid()}, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Daemon starts a daemon for cfg and stops it when the test ends.
func Daemon(t testing.TB, cfg *config.Config, o daemon.Options) *daemon.Daemon {
	t.Helper()
	d, err := daemon.Start(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Dial attaches a 9P client to the daemon's unix socket.
func Dial(t testing.TB, cfg *config.Config) *client.Fsys {
	t.Helper()
	fsys, err := client.Mount(context.Background(), cfg.Socket, "tester", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return fsys
}

// RequireFUSE skips a test when /dev/fuse is missing, or fails it when
// OLLIE_REQUIRE_FUSE is set (as CI does), so a missing FUSE never passes
// silently there.
func RequireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		if os.Getenv("OLLIE_REQUIRE_FUSE") != "" {
			t.Fatalf("FUSE unavailable (%v) but OLLIE_REQUIRE_FUSE is set", err)
		}
		t.Skipf("FUSE unavailable: %v", err)
	}
}

// Require skips a test when the program it needs is not on PATH, or
// fails it in CI (CI or OLLIE_REQUIRE_ALL set, as .ci/run has them), so
// that a missing part never passes silently there.
func Require(t testing.TB, program string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("OLLIE_REQUIRE_ALL") != "" {
			t.Fatalf("%s is missing (%v) and this is CI: test.sh should have installed it", program, err)
		}
		t.Skipf("%s is missing: %v", program, err)
	}
}

// RequireLandlock skips a test that needs the kernel's Landlock, or
// fails it in CI (CI or OLLIE_REQUIRE_ALL set), as Require does.
func RequireLandlock(t testing.TB) {
	t.Helper()
	if sandbox.ABI() <= 0 {
		if os.Getenv("CI") != "" || os.Getenv("OLLIE_REQUIRE_ALL") != "" {
			t.Fatal("no Landlock in this kernel, and this is CI")
		}
		t.Skip("no Landlock in this kernel")
	}
}

// RequireRoot skips a test that needs root (to mount, say) when it runs
// as another user, or fails it when OLLIE_REQUIRE_ROOT is set, so that
// such a test never passes silently where root is expected.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("OLLIE_REQUIRE_ROOT") != "" || os.Getenv("OLLIE_REQUIRE_ALL") != "" {
			t.Fatalf("not root (%s) but OLLIE_REQUIRE_ROOT is set", why)
		}
		t.Skipf("not root: %s", why)
	}
}

// WriteFile writes a file under dir, making directories as needed.
//
// An executable is written by a child process: if this process held it
// open for writing, a fork made meanwhile by a parallel test would hold
// the descriptor too until its exec, and running the file would fail with
// "text file busy".
func WriteFile(t testing.TB, dir, name, content string, perm os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0700); err != nil {
		t.Fatal(err)
	}
	if perm&0111 == 0 {
		if err := os.WriteFile(p, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		return
	}
	cmd := exec.Command("/bin/sh", "-c", `cat > "$1" && chmod "$2" "$1"`, "sh", p, fmt.Sprintf("%o", perm.Perm()))
	cmd.Stdin = strings.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write %s: %v %s", p, err, out)
	}
}

// SandboxMain is the TestMain of packages whose tests run execute_code:
// the test binary is then also the sandbox helper, started as
// `BINARY sandbox-exec ...` as ollie itself is.
func SandboxMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperCommand {
		os.Exit(sandbox.HelperMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// LogBuf collects output for a test to show or search while it is still
// being written: log lines (its Logf fits the Logf fields of the options
// that take one) or a process's stdout and stderr (it is an io.Writer).
type LogBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuf) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, format+"\n", args...)
}

func (l *LogBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LogBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// UnmountUnder detaches every mount below dir: the tmp quotas (tmpfs) a
// daemon killed by a test left behind, which would make the removal of
// the test's temporary directory fail.
func UnmountUnder(dir string) {
	ms, err := mountinfo.Read()
	if err != nil {
		return
	}
	var under []string
	for _, m := range ms {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			under = append(under, m.Point)
		}
	}
	for i := len(under) - 1; i >= 0; i-- { // the deepest, mounted last, first
		syscall.Unmount(under[i], syscall.MNT_DETACH)
	}
}
