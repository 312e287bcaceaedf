package fusebridge_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/ninep/ninetest"
	"ollie.dev/ollie/internal/testutil"
)

// hangTimeout bounds waits that only exist to turn a hang into a failure.
const hangTimeout = 30 * time.Second

// env is one test's daemon and mount.
type env struct {
	t    testing.TB
	tree *ninetest.Tree
	sock string
	ln   *ninetest.Listener
	mnt  string
	srv  *fusebridge.Server
	log  *testutil.LogBuf
}

func requireFUSE(t testing.TB) {
	t.Helper()
	testutil.RequireFUSE(t) // a failure in CI, not a skip
}

// mount serves a fresh ninetest tree on a unix socket and mounts it.
func mount(t testing.TB, opts fusebridge.Options) *env {
	requireFUSE(t)
	e := &env{t: t, tree: ninetest.NewTree(), log: &testutil.LogBuf{}}
	dir := t.TempDir()
	e.sock = filepath.Join(dir, "9p.sock")
	e.mnt = filepath.Join(dir, "mnt")
	if err := os.Mkdir(e.mnt, 0755); err != nil {
		t.Fatal(err)
	}
	e.listen()
	opts.Logf = e.log.Logf
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", e.sock) }
	srv, err := fusebridge.Mount(context.Background(), e.mnt, dial, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	t.Cleanup(func() {
		srv.Unmount()
		e.ln.Close()
		e.tree.Unblock()
		if t.Failed() {
			t.Logf("mount log:\n%s", e.log)
		}
	})
	return e
}

func (e *env) listen() {
	ln, err := e.tree.Listen("unix", e.sock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.ln = ln
}

// sh runs a bash script with $M set to the mount point, from outside the
// mount (see go-fuse's notes on deadlocks), and returns its output.
func (e *env) sh(script string) string {
	e.t.Helper()
	out, err := e.try(script)
	if err != nil {
		e.t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

func (e *env) try(script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hangTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = filepath.Dir(e.mnt)
	cmd.Env = append(os.Environ(), "M="+e.mnt, "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestShellOps(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	if got := e.sh(`cat $M/hello`); got != "hello, world\n" {
		t.Errorf("cat hello = %q", got)
	}
	ls := e.sh(`ls -l $M`)
	for _, name := range []string{"hello", "dir", "block", "grow", "ctl"} {
		if !strings.Contains(ls, name) {
			t.Errorf("ls -l lacks %s:\n%s", name, ls)
		}
	}
	e.sh(`echo one > $M/f; echo two >> $M/f; test "$(cat $M/f)" = "one
two"`)
	e.sh(`echo 1 > $M/f; test "$(cat $M/f)" = 1`) // O_TRUNC of an existing file
	e.sh(`mv $M/f $M/g; test ! -e $M/f; test "$(cat $M/g)" = 1`)
	e.sh(`mv $M/g $M/dir/; test "$(cat $M/dir/g)" = 1; test ! -e $M/g`) // EXDEV: copy + remove
	e.sh(`echo x > $M/h; mv $M/h $M/hello; test "$(cat $M/hello)" = x`) // rename over a file
	e.sh(`mkdir $M/d; mkdir $M/d/e; touch $M/d/e/t; rm -r $M/d; test ! -e $M/d`)
	e.sh(`cp $M/dir/g $M/c; cp -p $M/dir/g $M/cp; cmp $M/c $M/cp; touch -d @1000000000 $M/c; test $(stat -c %Y $M/c) = 1000000000`)
	e.sh(`chmod 600 $M/c; test $(stat -c %a $M/c) = 600; truncate -s 0 $M/c; test ! -s $M/c`)
	e.sh(`echo needle > $M/dir/n; grep -r needle $M --exclude=block --exclude=ctl | grep -q dir/n`)
	if _, ok := e.tree.Lookup("dir", "n"); !ok {
		t.Errorf("file written through the mount is not on the server")
	}
	if out, err := e.try(`rmdir $M/dir`); err == nil || !strings.Contains(out, "not empty") {
		t.Errorf("rmdir of non-empty dir: %v %s", err, out)
	}
	if out, err := e.try(`cat $M/nonexistent`); err == nil || !strings.Contains(out, "No such file") {
		t.Errorf("cat of missing file: %v %s", err, out)
	}
}

func TestCtlErrorComesBackOnWrite(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	out, err := e.try(`echo bogus > $M/ctl`)
	if err == nil || !strings.Contains(out, "Invalid argument") {
		t.Fatalf("echo bogus > ctl: %v %q; want Invalid argument", err, out)
	}
	if !strings.Contains(e.log.String(), "bad request: unknown command bogus") {
		t.Errorf("mount log lacks the daemon's message:\n%s", e.log)
	}
	e.sh(`echo ok go > $M/ctl; printf 'ok again' >> $M/ctl`)
	if got := strings.Join(e.tree.Ctl, ","); got != "ok go,ok again" {
		t.Errorf("ctl got %q", got)
	}
}

func TestEditors(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	e.sh(`printf 'alpha\nbeta\n' > $M/e; sed -i 's/beta/gamma/' $M/e; test "$(cat $M/e)" = "alpha
gamma"`)
	if _, err := exec.LookPath("vim"); err != nil {
		t.Fatal("vim is not installed (apt-get install vim-nox)")
	}
	e.sh(`vim -u NONE -N -es -c '%s/alpha/delta/' -c 'wq' $M/e; test "$(cat $M/e)" = "delta
gamma"`)
	e.sh(`cd /tmp && vim -u NONE -N -es -c 'call setline(1, "new line")' -c 'wq' $M/dir/v; test "$(cat $M/dir/v)" = "new line"`)
	if got := e.sh(`ls -a $M $M/dir | grep -c swp || true`); strings.TrimSpace(got) != "0" {
		t.Errorf("vim left swap files behind")
	}
}

func TestLargeAndBinaryData(t *testing.T) {
	e := mount(t, fusebridge.Options{})
	e.sh(`head -c 1048576 /dev/zero | tr '\0' a > line; echo >> line; cp line $M/line; cmp line $M/line; test $(wc -L < $M/line) = 1048576`)
	e.sh(`head -c 3000000 /dev/urandom > bin; cat bin > $M/bin; cmp bin $M/bin; test $(stat -c %s $M/bin) = 3000000`)
	e.sh(`for i in $(seq 0 255); do printf "\\$(printf %o $i)"; done > all; cp all $M/all; cmp all $M/all`)
}
