package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

func TestMain(m *testing.M) { testutil.SandboxMain(m) }

// TestTmpQuota fills one session's tmp, by a file and by a stage's
// output, and requires a clear error there while another session's tmp
// still takes writes.
func TestTmpQuota(t *testing.T) {
	testutil.RequireRoot(t, "the tmp quota is a tmpfs the daemon mounts")
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, cwd := filepath.Join(root, "home"), filepath.Join(root, "home", "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := session.Open(session.Options{Dir: filepath.Join(root, "data", "s"), TmpQuotaMB: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	exe, _ := os.Executable()
	ex, err := execute.New(execute.Options{Exe: exe, Sandbox: config.DefaultSandbox(), Home: home, Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(s *session.Session, src string) *execute.Result {
		t.Helper()
		tmp, err := s.EnsureTmp()
		if err != nil {
			t.Fatal(err)
		}
		code, _ := json.Marshal(src)
		args := `{"steps":[{"language":"bash","code":` + string(code) + `}]}`
		res, err := ex.Run(context.Background(), execute.Spec{Cwd: cwd, Tmp: tmp}, []byte(args))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var ss [2]*session.Session
	for i := range ss {
		if ss[i], err = m.New(session.Spec{Cwd: cwd}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ss[i].ReleaseTmp)
	}
	res := run(ss[0], `echo TRIED; dd if=/dev/zero of="$TMPDIR/big" bs=1M count=3 2>&1 | grep -o 'No space left on device' | head -1`)
	if got := string(res.Output); got != "TRIED\nNo space left on device\n" {
		t.Fatalf("writing past the quota: %q\n%s", got, res)
	}
	// The tmp is full: a stage's output, spooled there past 4 MB in
	// memory, has no room either.
	res = run(ss[0], `echo TRIED >&2; head -c 6000000 /dev/zero`)
	t.Logf("output past the quota:\n%s", res)
	if !res.Failed || !strings.Contains(res.String(), "no space left in the session's tmp") {
		t.Fatalf("output past the quota: %s", res)
	}
	res = run(ss[1], `head -c 1000000 /dev/zero > "$TMPDIR/f" && wc -c < "$TMPDIR/f"`)
	if res.Failed || strings.TrimSpace(string(res.Output)) != "1000000" {
		t.Fatalf("another session cannot write its tmp: %s", res)
	}
	// A stopping daemon leaves no tmpfs behind.
	m.Close()
	for _, s := range ss {
		var st, parent syscall.Stat_t
		syscall.Stat(s.TmpDir(), &st)
		syscall.Stat(s.Dir(), &parent)
		if st.Dev != parent.Dev {
			t.Errorf("%s is still mounted after Close", s.TmpDir())
		}
		// Nor does anything running beside a turn (the warming of a
		// session's sandbox) mount it again.
		if d, err := s.EnsureTmp(); err == nil {
			t.Errorf("tmp %s made again after Close", d)
		}
		syscall.Stat(s.TmpDir(), &st)
		if st.Dev != parent.Dev {
			t.Errorf("%s mounted again after Close", s.TmpDir())
			syscall.Unmount(s.TmpDir(), syscall.MNT_DETACH)
		}
	}
}
