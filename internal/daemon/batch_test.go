package daemon_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

// group holds turns until n have started, and records when each starts
// and ends: turns that run one after another never all start, so the
// group fails them rather than hang.
type group struct {
	n   int
	all chan struct{} // closed when n turns have started

	mu           sync.Mutex
	starts, ends []time.Time
}

func newGroup(n int) *group { return &group{n: n, all: make(chan struct{})} }

func (g *group) run(ctx context.Context) error {
	g.mu.Lock()
	g.starts = append(g.starts, time.Now())
	if len(g.starts) == g.n {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(testutil.HangTimeout):
		return errs.E(errs.Unavailable, "the other members never started")
	}
	g.mu.Lock()
	g.ends = append(g.ends, time.Now())
	g.mu.Unlock()
	return nil
}

// overlap reports whether every turn started before any ended.
func (g *group) overlap() (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.starts) != g.n || len(g.ends) != g.n {
		return false, fmt.Sprintf("%d turns started and %d ended, want %d", len(g.starts), len(g.ends), g.n)
	}
	last, first := slices.MaxFunc(g.starts, time.Time.Compare), slices.MinFunc(g.ends, time.Time.Compare)
	return last.Before(first), fmt.Sprintf("last start %v, first end %v", last, first)
}

// TestBatchForkJoinInOrder runs a batch of 8 members that all run at
// once (each waits for the others to start) and joins their replies in
// the members' order.
func TestBatchForkJoinInOrder(t *testing.T) {
	cfg := testutil.Home(t, nil)
	together := newGroup(8) // holds the turns whose prompt starts with "together"
	r := testutil.NewEchoRunner()
	r.Before = func(ctx context.Context, turn *session.Turn) error {
		if strings.HasPrefix(turn.Prompt, "together") {
			return together.run(ctx)
		}
		return nil
	}
	testutil.Daemon(t, cfg, daemon.Options{Runner: r})
	fsys := testutil.Dial(t, cfg)
	cwd := t.TempDir()
	f, err := fsys.Open(ctx, "b/new", plan9.ORDWR)
	if err != nil {
		t.Fatal(err)
	}
	spec := "cwd=" + cwd + "\nparallel=8\n---\ntogether on it"
	if _, err := f.WriteAt(ctx, []byte(spec), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, _ := f.ReadAt(ctx, buf, 0)
	f.Clunk(ctx)
	id := strings.TrimSpace(string(buf[:n]))
	if len(id) != 12 || id[6] != '-' {
		t.Fatalf("job id %q", id)
	}
	res := read(t, fsys, "b/"+id+"/result")
	var want strings.Builder
	for k := 1; k <= 8; k++ {
		fmt.Fprintf(&want, "=== %d/8 ===\necho: together on it\n", k)
	}
	if res != want.String() {
		t.Fatalf("result:\n%s\nwant:\n%s", res, want.String())
	}
	if ok, why := together.overlap(); !ok {
		t.Errorf("the members did not run at once: %s", why)
	}
	if st := read(t, fsys, "b/"+id+"/state"); st != "done\n" {
		t.Errorf("state = %q", st)
	}
	for k := 1; k <= 8; k++ {
		if c := read(t, fsys, fmt.Sprintf("b/%s/%d/chat", id, k)); !strings.Contains(c, "echo: together on it") {
			t.Errorf("member %d chat = %q", k, c)
		}
	}
	if idx := read(t, fsys, "s/idx"); idx != "" {
		t.Errorf("batch members show in s/idx: %q", idx)
	}
	// rm -r removes what is inside a directory before it.
	for _, p := range []string{"state", "result", "ctl", "1/chat", "1", "8/reply", "8"} {
		if err := fsys.Remove(ctx, "b/"+id+"/"+p); err != nil {
			t.Errorf("remove b/<id>/%s (as rm -r does): %v", p, err)
		}
	}
	if err := fsys.Remove(ctx, "b/"+id); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(ctx, "b/"+id); err == nil {
		t.Error("removed job still there")
	}
}

func TestBatchSpecErrors(t *testing.T) {
	fsys, _, _ := sessionSetup(t)
	cwd := t.TempDir()
	for _, bad := range []struct{ spec, want string }{
		{"cwd=" + cwd + "\nno separator", "a line ---"},
		{"cwd=" + cwd + "\n---\n   ", "no prompt"},
		{"cwd=" + cwd + " parallel=0\n---\nx", "parallel"},
		{"cwd=" + cwd + " parallel=many\n---\nx", "parallel"},
		{"cwd=" + cwd + " parallel=100000\n---\nx", "parallel"},
		{"cwd=" + cwd + " colour=red\n---\nx", "unknown key"},
		{"parallel=2\n---\nx", "cwd is required"},
		{"cwd=" + cwd + " agent=nosuch\n---\nx", "no agent"},
	} {
		if err := write(fsys, "b/new", []byte(bad.spec+"\n")); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("b/new <- %q: %v, want %q", bad.spec, err, bad.want)
		}
	}
	ents, _ := fsys.ReadDir(ctx, "b")
	for _, e := range ents {
		if e.Name != "new" && e.Name != "q" {
			t.Errorf("a bad spec made job %s", e.Name)
		}
	}
}

func TestSpawnInheritsAndStops(t *testing.T) {
	fsys, d, r := sessionSetup(t)
	id := newSession(t, fsys, "cwd="+t.TempDir()+" name=parent")
	f, err := fsys.Open(ctx, "s/parent/spawn", plan9.ORDWR)
	if err != nil {
		t.Fatal(err)
	}
	spec := "parallel=2\n---\nblock in the child"
	if _, err := f.WriteAt(ctx, []byte(spec), 0); err != nil {
		t.Fatal(err)
	}
	// A shell that opened the file read-write reads on after its write.
	buf := make([]byte, 100)
	n, _ := f.ReadAt(ctx, buf, int64(len(spec)))
	f.Clunk(ctx)
	job := strings.TrimSpace(string(buf[:n]))
	j, ok := d.Batch.Get(job)
	if !ok {
		t.Fatalf("no job %q", job)
	}
	sp := j.Spec()
	if sp.Parent != id || sp.Sandbox != "workspace" || sp.Agent != "default" {
		t.Errorf("spawned job spec %+v: want parent %s, the parent's policy and agent", sp, id)
	}
	for read(t, fsys, "b/"+job+"/1/state") != "running\n" {
		time.Sleep(5 * time.Millisecond)
	}
	// Stopping the parent stops its sub-agents.
	if err := write(fsys, "s/parent/ctl", []byte("stop\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-j.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the sub-agents did not stop with their parent")
	}
	res := read(t, fsys, "b/"+job+"/result")
	if strings.Contains(res, "echo: block") {
		t.Errorf("a stopped sub-agent finished: %q", res)
	}
	_ = r
}
