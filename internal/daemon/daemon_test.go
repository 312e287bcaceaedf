package daemon_test

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

var ctx = context.Background()

// staticFS hides the parts of the tree whose content moves on its own
// (counters), which fstest.TestFS would rightly call inconsistent.
type staticFS struct{ fs.FS }

func (s staticFS) Open(name string) (fs.File, error) {
	if name == "stats" || strings.HasPrefix(name, "stats/") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := s.FS.Open(name)
	if err != nil || name != "." {
		return f, err
	}
	return hideDir{f.(fs.ReadDirFile)}, nil
}

type hideDir struct{ fs.ReadDirFile }

func (h hideDir) ReadDir(n int) ([]fs.DirEntry, error) {
	ents, err := h.ReadDirFile.ReadDir(n)
	out := ents[:0]
	for _, e := range ents {
		if e.Name() != "stats" {
			out = append(out, e)
		}
	}
	return out, err
}

func TestFSAcceptance(t *testing.T) {
	cfg := testutil.Home(t, nil)
	testutil.Daemon(t, cfg, daemon.Options{})
	fsys := testutil.Dial(t, cfg)
	tfs := staticFS{client.IOFS(ctx, fsys)}
	if err := fstest.TestFS(tfs, "help", "backends", "a/default.json", "p/base.md", "sk/idx", "sk/tree.md", "t/idx"); err != nil {
		t.Fatal(err)
	}
}

func TestSocketIsPrivate(t *testing.T) {
	cfg := testutil.Home(t, nil)
	testutil.Daemon(t, cfg, daemon.Options{})
	fi, err := os.Stat(cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	di, err := os.Stat(filepath.Dir(cfg.Socket))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0700 {
		t.Errorf("socket directory mode %v, want 0700", di.Mode().Perm())
	}
}

func TestSecondDaemonRefused(t *testing.T) {
	cfg := testutil.Home(t, nil)
	testutil.Daemon(t, cfg, daemon.Options{})
	_, err := daemon.Start(cfg, daemon.Options{})
	if err == nil || !strings.Contains(err.Error(), "already serving") || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second daemon: %v, want a clear refusal naming the pid", err)
	}
	// The first one still serves.
	if _, err := testutil.Dial(t, cfg).ReadFile(ctx, "help"); err != nil {
		t.Fatal(err)
	}
}

func TestStaleSocketCleaned(t *testing.T) {
	cfg := testutil.Home(t, nil)
	if err := os.MkdirAll(filepath.Dir(cfg.Socket), 0700); err != nil {
		t.Fatal(err)
	}
	// A socket file with no one behind it, as a killed daemon leaves.
	l, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(cfg.Socket); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}
	testutil.Daemon(t, cfg, daemon.Options{})
	if _, err := testutil.Dial(t, cfg).ReadFile(ctx, "help"); err != nil {
		t.Fatal(err)
	}
}

func TestNotASocketKept(t *testing.T) {
	cfg := testutil.Home(t, nil)
	testutil.WriteFile(t, filepath.Dir(cfg.Socket), filepath.Base(cfg.Socket), "precious", 0600)
	if _, err := daemon.Start(cfg, daemon.Options{}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("start over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(cfg.Socket); string(b) != "precious" {
		t.Fatal("regular file at the socket path was touched")
	}
}

func TestDefaultsKeepEdits(t *testing.T) {
	cfg := testutil.Home(t, nil)
	d := testutil.Daemon(t, cfg, daemon.Options{})
	edited := filepath.Join(cfg.ConfigDir, "p", "base.md")
	if err := os.WriteFile(edited, []byte("my own prompt\n"), 0644); err != nil {
		t.Fatal(err)
	}
	removed := filepath.Join(cfg.ConfigDir, "sk", "tree.md")
	if err := os.Remove(removed); err != nil {
		t.Fatal(err)
	}
	d.Close()
	testutil.Daemon(t, cfg, daemon.Options{})
	if b, _ := os.ReadFile(edited); string(b) != "my own prompt\n" {
		t.Errorf("edited default overwritten: %q", b)
	}
	if _, err := os.Stat(removed); err == nil {
		t.Error("a default the user deleted came back")
	}
	if _, err := os.Stat(filepath.Join(cfg.ConfigDir, "a", "default.json")); err != nil {
		t.Error(err)
	}
}

// mustFail asserts err is of kind k and its text mentions want.
func mustFail(t *testing.T, what string, err error, k errs.Kind, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want a %q error", what, k)
		return
	}
	if errs.KindOf(err) != k || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: got %q, want kind %q mentioning %q", what, err, k, want)
	}
}

var _ = plan9.OREAD
