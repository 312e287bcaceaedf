package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

// crashRig is `ollie serve` in a process of its own, to be killed with
// SIGKILL, under a real FUSE mount in this process that reconnects to
// each new daemon on the same socket.
type crashRig struct {
	t       *testing.T
	env     []string
	sock    string
	cwd     string
	mnt     string
	d       *daemonProc
	started int // daemons started
}

func newCrashRig(t *testing.T) *crashRig {
	testutil.RequireFUSE(t)
	llm := llmtest.NewTest(t, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	root := t.TempDir()
	home := filepath.Join(root, "home")
	r := &crashRig{t: t, cwd: filepath.Join(root, "proj"), mnt: filepath.Join(root, "mnt")}
	os.MkdirAll(r.cwd, 0700)
	os.MkdirAll(r.mnt, 0700)
	rt, _ := os.MkdirTemp("", "olf")
	t.Cleanup(func() { os.RemoveAll(rt) })
	r.sock = filepath.Join(rt, "ollie.sock")
	r.env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "OLLAMA_HOST=" + llm.URL}
	r.restart()
	dial := func(ctx context.Context) (*client.Conn, error) { return client.Dial(ctx, "unix", r.sock) }
	srv, err := fusebridge.Mount(context.Background(), r.mnt, dial, fusebridge.Options{Uname: "tester", Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Unmount() })
	if err := r.write("s/new", "cwd="+r.cwd+"\nname=c"); err != nil {
		t.Fatal(err)
	}
	return r
}

// restart kills the daemon, if one runs, with SIGKILL and starts another.
func (r *crashRig) restart() {
	if r.d != nil {
		r.d.kill9()
	}
	r.d = startDaemon(r.t, r.env, r.sock)
	r.started++
}

// write is open, one write(2) per piece, close(2), through the mount; its
// error is the first of them.
func (r *crashRig) write(name string, pieces ...string) error {
	f, err := os.OpenFile(filepath.Join(r.mnt, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	for _, p := range pieces {
		if _, err := f.WriteString(p); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// writeUp writes while the mount reconnects to a new daemon: the first
// requests after a restart may find the old connection dead.
func (r *crashRig) writeUp(name string, pieces ...string) {
	r.t.Helper()
	var err error
	for deadline := time.Now().Add(testutil.HangTimeout); time.Now().Before(deadline); {
		if err = r.write(name, pieces...); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.t.Fatalf("write %s with the daemon up: %v", name, err)
}

func (r *crashRig) read(name string) string {
	r.t.Helper()
	var err error
	for deadline := time.Now().Add(testutil.HangTimeout); time.Now().Before(deadline); {
		var b []byte
		if b, err = os.ReadFile(filepath.Join(r.mnt, name)); err == nil {
			return string(b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.t.Fatalf("read %s: %v", name, err)
	return ""
}

// A prompt whose close(2) returned survives a kill -9 of the daemon right
// after it: 1,000 prompts without a final newline, the daemon killed
// after a random number of them (about every 100) and restarted.
func TestKill9AfterClose(t *testing.T) {
	r := newCrashRig(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	var acked []string
	for n := 0; len(acked) < 1000; {
		k := 50 + rng.IntN(100)
		for range k {
			p := fmt.Sprintf("crash %d", n)
			n++
			r.writeUp("s/c/prompt", p)
			acked = append(acked, p)
		}
		r.restart() // right after the last close returned
	}
	// What the session holds: the history of the turns begun and the queue.
	seen := map[string]bool{}
	for _, line := range strings.Split(r.read("s/c/context"), "\n") {
		var m struct{ Role, Text string }
		if json.Unmarshal([]byte(line), &m) == nil && m.Role == "user" {
			seen[m.Text] = true
		}
	}
	for _, line := range strings.Split(r.read("s/c/queue"), "\n") {
		var p string
		if json.Unmarshal([]byte(line), &p) == nil {
			seen[p] = true
		}
	}
	lost := 0
	for _, p := range acked {
		if !seen[p] {
			lost++
			if lost < 10 {
				t.Errorf("acknowledged prompt %q lost", p)
			}
		}
	}
	t.Logf("%d acknowledged prompts, %d daemons killed with SIGKILL, %d lost", len(acked), r.started-1, lost)
}

// plan is replaced atomically at the close: a kill -9 at any point of
// open, writes and close leaves the old plan unless the close returned,
// and then the new one; never an empty or a partial plan.
func TestKill9Plan(t *testing.T) {
	r := newCrashRig(t)
	old := strings.Repeat("old plan line\n", 3000) // 42 KB
	r.writeUp("s/c/plan", old)
	const pieces = 10
	kept, replaced := 0, 0
	for i := range 20 {
		next := strings.Repeat(fmt.Sprintf("plan %d line\n", i), 3000)
		// Before piece killAt (0: right after the open), or before the
		// close (pieces), or right after it (pieces+1): each point once
		// at least.
		killAt := i % (pieces + 2)
		f, err := os.OpenFile(filepath.Join(r.mnt, "s/c/plan"), os.O_WRONLY|os.O_TRUNC, 0)
		for deadline := time.Now().Add(testutil.HangTimeout); err != nil && errorsIsConn(err) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			f, err = os.OpenFile(filepath.Join(r.mnt, "s/c/plan"), os.O_WRONLY|os.O_TRUNC, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		// The writer keeps writing after the kill, as a program that
		// ignores errors would, or gives up at once, as one killed too.
		giveUp := i%2 == 1
		wrote := true
		for j := 0; j < pieces; j++ {
			if j == killAt {
				r.restart()
				if giveUp {
					wrote = false
					break
				}
			}
			if _, err := f.WriteString(next[j*len(next)/pieces : (j+1)*len(next)/pieces]); err != nil {
				wrote = false
			}
		}
		if killAt == pieces {
			r.restart()
		}
		// Acknowledged: every write and the close succeeded.
		acked := f.Close() == nil && wrote
		if killAt == pieces+1 {
			r.restart()
		}
		got := r.read("s/c/plan")
		switch {
		case acked && got == next:
			old = next
			replaced++
		case !acked && got == old:
			kept++
		default:
			t.Errorf("try %d, killed at %d of %d, acknowledged %v: plan is %d bytes %.40q, want the %s plan", i, killAt, pieces, acked, len(got), got, map[bool]string{true: "new", false: "old"}[acked])
			old = got
		}
	}
	t.Logf("plan under kill -9: %d kept the old plan, %d the new, of 20", kept, replaced)
}

func errorsIsConn(err error) bool {
	return strings.Contains(err.Error(), syscall.ENOTCONN.Error())
}
