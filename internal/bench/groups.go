package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/trim"
)

// group9P: the daemon over its socket, next to round trips to the echo
// process.
func (r *run) group9P() error {
	root := r.main.Fsys.Root
	buf := make([]byte, 8192)
	read := func() error {
		f, err := root.Walk(r.ctx, "m", "bench")
		if err != nil {
			return err
		}
		defer f.Clunk(r.ctx)
		if err := f.Open(r.ctx, plan9.OREAD); err != nil {
			return err
		}
		_, err = f.Read(r.ctx, buf, 0)
		return err
	}
	open, err := r.main.Fsys.Open(r.ctx, benchFile, plan9.OREAD)
	if err != nil {
		return err
	}
	defer open.Clunk(r.ctx)
	pread := func() error {
		n, err := open.Read(r.ctx, buf, 0)
		if err == nil && n != len(benchContent) {
			err = fmt.Errorf("pread: %d bytes", n)
		}
		return err
	}
	st, err := MeasureAll(r.o.N, r.echo.RoundTrips(4), read, r.echo.RoundTrips(1), pread)
	if err != nil {
		return err
	}
	r.add(
		Row{Key: "floor.rt4", What: "4 round trips to an echo process over a unix socket", Val: dur(st[0].P50), Note: p99(st[0])},
		Row{Key: "9p.read", What: "walk+open+read+clunk of " + benchFile + " (13 B)", Val: dur(st[1].P50), Note: p99(st[1]), Floor: "floor.rt4"},
		Row{Key: "floor.rt1", What: "1 round trip to the echo process", Val: dur(st[2].P50), Note: p99(st[2])},
		Row{Key: "9p.pread", What: "pread on an open fid", Val: dur(st[3].P50), Note: p99(st[3]), Floor: "floor.rt1"},
	)
	return nil
}

func p99(s Stats) string { return fmt.Sprintf("p50; p99 %s", dur(s.P99)) }

// groupFUSE: a cat of the small file through a mount made by `ollie
// mount` in a process of its own, next to the same on tmpfs.
func (r *run) groupFUSE() error {
	mnt := filepath.Join(r.dir, "mnt")
	if err := os.Mkdir(mnt, 0700); err != nil {
		return err
	}
	p, err := startProc("mount", r.dir, append([]string{"HOME=" + r.main.home}, r.o.Env...), r.o.Exe, "mount", mnt, r.main.sock)
	if err != nil {
		return err
	}
	stop := func() {
		syscall.Unmount(mnt, syscall.MNT_DETACH)
		p.Stop(10 * time.Second)
	}
	defer stop()
	file := filepath.Join(mnt, filepath.FromSlash(benchFile))
	if err := p.waitFor("mount", startTimeout, func() bool { _, err := os.Stat(file); return err == nil }); err != nil {
		return err
	}
	tdir, undo, err := Tmpfs(r.dir)
	if err != nil {
		return err
	}
	defer undo()
	tmp := filepath.Join(tdir, "file")
	if err := os.WriteFile(tmp, []byte(benchContent), 0600); err != nil {
		return err
	}
	st, err := MeasureAll(r.o.N, OpenReadClose(tmp), OpenReadClose(file), Stat(tmp), Stat(file))
	if err != nil {
		return err
	}
	r.add(
		Row{Key: "floor.tmpfs.read", What: "open+read+close of a 13 B file on tmpfs", Val: dur(st[0].P50), Note: p99(st[0])},
		Row{Key: "fuse.read", What: "open+read+close of " + benchFile + " through the mount", Val: dur(st[1].P50), Note: p99(st[1]), Floor: "floor.tmpfs.read"},
		Row{Key: "floor.tmpfs.stat", What: "stat of the tmpfs file", Val: dur(st[2].P50), Note: p99(st[2])},
		Row{Key: "fuse.stat", What: "stat of " + benchFile + " through the mount", Val: dur(st[3].P50), Note: p99(st[3]), Floor: "floor.tmpfs.stat"},
	)
	return nil
}

// groupSession: creation through a write to s/new and through the clone
// file, next to laying out a directory and a file on the disk the
// daemon's sessions are on; and the write+fsync floors of what is
// durable (a prompt), on that disk and on tmpfs.
func (r *run) groupSession() error {
	tdir, undo, err := Tmpfs(r.dir)
	if err != nil {
		return err
	}
	defer undo()
	newS := func() error { _, err := r.main.NewSession(r.ctx, ""); return err }
	clone := func() error { _, err := r.main.Clone(r.ctx); return err }
	ops := []func() error{WriteFsync(r.main.home), WriteFsync(tdir), MkdirCreate(r.main.home), newS, clone}
	if r.isRef {
		ops = ops[:4] // its s/new is no clone file
	}
	st, err := MeasureAll(min(r.o.N, 1000), ops...)
	if err != nil {
		return err
	}
	r.add(
		Row{Key: "floor.fsync", What: "create+write+fsync+close of a 64 B file on the daemon's disk", Val: dur(st[0].P50), Note: p99(st[0])},
		Row{Key: "floor.tmpfs.fsync", What: "the same write+fsync on tmpfs", Val: dur(st[1].P50), Note: p99(st[1])},
		Row{Key: "floor.mkdir", What: "mkdir, create+write+close of a 64 B file in it, remove both, on the daemon's disk", Val: dur(st[2].P50), Note: p99(st[2])},
		Row{Key: "session.new", What: "session creation: write to s/new", Val: dur(st[3].P50), Note: p99(st[3]), Floor: "floor.mkdir"},
	)
	if !r.isRef {
		r.add(Row{Key: "session.clone", What: "session creation: open s/new, write, read the id, clunk", Val: dur(st[4].P50), Note: p99(st[4]), Floor: "floor.mkdir"})
	}
	return nil
}

// turnPool is how many sessions the turn rows rotate over, so no history
// grows long.
const turnPool = 20

// sessions creates n sessions on d and gives each a first, untimed turn
// if prompt is not "".
func (r *run) sessions(d *Daemon, n int, prompt string) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		id, err := d.NewSession(r.ctx, "")
		if err != nil {
			return nil, err
		}
		if prompt != "" {
			if err := d.Turn(r.ctx, id, prompt); err != nil {
				return nil, err
			}
		}
		ids[i] = id
	}
	return ids, nil
}

// cpuTurns is an operation of turns on a pool of sessions that adds up
// the daemon's CPU time they took.
type cpuTurns struct {
	r      *run
	d      *Daemon
	ids    []string
	prompt string
	next   int
	cpu    time.Duration
	runs   int
}

func (t *cpuTurns) op() error {
	id := t.ids[t.next%len(t.ids)]
	t.next++
	before, err := CPU(t.d.Pid())
	if err != nil {
		return err
	}
	if err := t.d.Turn(t.r.ctx, id, t.prompt); err != nil {
		return err
	}
	after, err := CPU(t.d.Pid())
	t.cpu += after - before
	t.runs++
	return err
}

func (t *cpuTurns) perTurn() time.Duration { return t.cpu / time.Duration(max(t.runs, 1)) }

// pacedPause is the idle time before each turn of turn.paced.
const pacedPause = 50 * time.Millisecond

// groupTurn: a steady turn (prompt, execute_code `echo hi`, answer) and
// one of 9 stages, next to a fork/exec; the daemon's CPU per turn; its
// memory after them.
func (r *run) groupTurn() error {
	one := &cpuTurns{r: r, d: r.main, prompt: promptOne}
	nine := &cpuTurns{r: r, d: r.main, prompt: promptNine}
	var err error
	if one.ids, err = r.sessions(r.main, turnPool, promptOne); err != nil {
		return err
	}
	if nine.ids, err = r.sessions(r.main, turnPool, promptNine); err != nil {
		return err
	}
	st, err := MeasureAll(r.o.Turns, ForkExec(), one.op, nine.op)
	if err != nil {
		return err
	}
	// A turn whose tool failed (refused, no sandbox) would be fast and
	// mean nothing.
	for _, id := range []string{one.ids[0], nine.ids[0]} {
		if err := r.main.ranTool(r.ctx, id); err != nil {
			return err
		}
	}
	// The CPU of the whole tree, apart: the daemon, its helpers, the
	// stages they ran (reaped or not), over turns made one after another.
	k := min(r.o.Turns, 50)
	tree0, err := TreeCPU(r.main.Pid())
	if err != nil {
		return err
	}
	for i := range k {
		if err := r.main.Turn(r.ctx, one.ids[i%len(one.ids)], promptOne); err != nil {
			return err
		}
	}
	tree1, err := TreeCPU(r.main.Pid())
	if err != nil {
		return err
	}
	// Turns paced as a real model paces them: the machine idle for a
	// while before each, as while a model thinks. What a turn sets up
	// once and then finds warm while turns follow each other shows here.
	var paced []time.Duration
	for i := range min(max(r.o.Turns/4, 1), 40) {
		time.Sleep(pacedPause)
		t, err := elapsed(func() error { return r.main.Turn(r.ctx, one.ids[i%len(one.ids)], promptOne) })
		if err != nil {
			return err
		}
		paced = append(paced, t)
	}
	pc := summarize(paced)
	m, err := settle(r.ctx, r.main.Pid())
	if err != nil {
		return err
	}
	// The same daemon once it has been quiet for two of its looks
	// (trim.WhenIdle), as it sits between a person's turns.
	var quiet Mem
	if !r.o.Small {
		select {
		case <-time.After(idleWait):
		case <-r.ctx.Done():
			return r.ctx.Err()
		}
		if quiet, err = settle(r.ctx, r.main.Pid()); err != nil {
			return err
		}
	}
	stage := (st[2].P50 - st[1].P50) / 8
	r.add(
		Row{Key: "floor.fork", What: "fork/exec of /bin/true", Val: dur(st[0].P50), Note: p99(st[0])},
		Row{Key: "turn", What: "turn: prompt, execute_code `echo hi`, answer, wait, reply (instant model), p50", Val: dur(st[1].P50),
			Note: fmt.Sprintf("p99 %s; daemon CPU %s per turn", dur(st[1].P99), dur(one.perTurn())), Floor: "floor.fork"},
		Row{Key: "turn.p99", What: "the same, p99", Val: dur(st[1].P99), Floor: "floor.fork"},
		Row{Key: "turn.paced", What: fmt.Sprintf("the same turn, each after %s with nothing running (a model's thinking), p50", pacedPause), Val: dur(pc.P50),
			Note: fmt.Sprintf("p99 %s over %d turns", dur(pc.P99), pc.N), Floor: "turn"},
		Row{Key: "turn.cpu", What: "daemon CPU per turn (/proc/<pid>/stat; its helpers not counted)", Val: dur(one.perTurn())},
		Row{Key: "turn.cpu.tree", What: "CPU per turn of the daemon, its helpers and the stages they ran", Val: dur((tree1 - tree0) / time.Duration(k)),
			Note: fmt.Sprintf("over %d turns one after another", k)},
		Row{Key: "turn.stage", What: "per extra execute_code stage (9-stage turn less 1-stage, / 8)", Val: dur(stage),
			Note: fmt.Sprintf("9-stage turn p50 %s; sandbox on", dur(st[2].P50)), Floor: "floor.fork"},
		Row{Key: "mem.turns", What: fmt.Sprintf("PSS of the daemon and its %d helpers after %d turns", m.Procs-1, 2*(r.o.Turns+r.o.Turns/10+turnPool)),
			Val: bytesV(m.PSS), Note: "RSS " + bytesV(m.RSS).String()},
	)
	if !r.o.Small {
		r.add(Row{Key: "mem.turns.idle", What: fmt.Sprintf("the same, after %s with no request", idleWait),
			Val: bytesV(quiet.PSS), Note: "RSS " + bytesV(quiet.RSS).String()})
	}
	return nil
}

// idleWait is how long the turn rows' daemon is left quiet before
// mem.turns.idle: two of ollie's looks for quiet (trim.WhenIdle) and a
// second.
const idleWait = 2*trim.IdleEvery + time.Second

// freshDaemon lays out a daemon with a home of its own, run from a copy
// of its executable of its own (and, for ollie, of the sandbox helper
// beside it), as a user runs the one daemon of their machine: the other
// daemons of the run, the main ones among them, do not share its
// executable's pages and so do not lower its PSS. (The reference's,
// shared with its main daemon, measured 4.4 MB of PSS idle where alone
// it measured 7.4: PSS splits a shared page between its processes.)
func (r *run) freshDaemon() (*Daemon, error) {
	r.fresh++
	d, err := r.daemon(fmt.Sprintf("fresh%d", r.fresh))
	if err != nil {
		return nil, err
	}
	exe := filepath.Join(filepath.Dir(d.home), filepath.Base(d.argv[0]))
	if err := copyExe(d.argv[0], exe, !r.isRef); err != nil {
		return nil, err
	}
	d.argv[0] = exe
	return d, nil
}

// groupFresh: daemons started anew, Rounds of each: the first start in
// an empty home to the first answer (it installs the defaults), a start
// of the same daemon again with its home installed to the first answer
// (start, socket, s/new, a prompt answered without a tool), and the first
// turn with execute_code of a daemon started anew, next to a steady turn;
// the idle daemon's memory.
func (r *run) groupFresh() error {
	var install, startup, first []time.Duration
	var idle []Mem
	answer := func(d *Daemon) (time.Duration, error) {
		start := time.Now()
		if err := d.Start(r.ctx); err != nil {
			return 0, err
		}
		id, err := d.NewSession(r.ctx, "")
		if err == nil {
			err = d.Turn(r.ctx, id, promptPlain)
		}
		return time.Since(start), err
	}
	for range r.o.Rounds {
		d, err := r.freshDaemon()
		if err != nil {
			return err
		}
		t, err := answer(d)
		if err != nil {
			return err
		}
		install = append(install, t)
		d.Stop()
		if t, err = answer(d); err != nil {
			return err
		}
		startup = append(startup, t)
		d.Stop()

		if err := d.Start(r.ctx); err != nil {
			return err
		}
		m, err := settle(r.ctx, d.Pid())
		if err != nil {
			return err
		}
		idle = append(idle, m)
		id, err := d.NewSession(r.ctx, "")
		if err != nil {
			return err
		}
		if t, err = elapsed(func() error { return d.Turn(r.ctx, id, promptOne) }); err != nil {
			return err
		}
		first = append(first, t)
		d.Stop()
	}
	in := summarize(install)
	su, ft := summarize(startup), summarize(first)
	slices.SortFunc(idle, func(a, b Mem) int { return int(a.PSS - b.PSS) })
	m := idle[len(idle)/2]
	steady := "turn"
	if _, ok := r.row("turn"); !ok {
		steady = ""
	}
	r.add(
		Row{Key: "fresh.install", What: "first start-up in an empty home to first answer: exec, defaults installed, socket, s/new, a prompt answered", Val: dur(in.P50),
			Note: fmt.Sprintf("median of %d; max %s", in.N, dur(in.Max)), Floor: "floor.fork"},
		Row{Key: "fresh.startup", What: "start-up to first answer, home installed: exec, socket, s/new, a prompt answered", Val: dur(su.P50),
			Note: fmt.Sprintf("median of %d; max %s", su.N, dur(su.Max)), Floor: "floor.fork"},
		Row{Key: "fresh.turn", What: "first turn (execute_code) of a fresh daemon", Val: dur(ft.P50),
			Note: fmt.Sprintf("median of %d; max %s; floor: a steady turn", ft.N, dur(ft.Max)), Floor: steady},
		Row{Key: "mem.idle", What: fmt.Sprintf("PSS of the idle daemon and its %d helpers", m.Procs-1), Val: bytesV(m.PSS), Note: "RSS " + bytesV(m.RSS).String()},
		Row{Key: "mem.idle.rss", What: "RSS of the same", Val: bytesV(m.RSS)},
	)
	return nil
}

// ingestPoll is how long the follower waits after a read that found
// nothing new: tail -f's loop, 5,000 times faster.
const ingestPoll = 200 * time.Microsecond

// groupIngest: a 1 MiB reply streamed by the model in 64-byte pieces,
// with and without a follower reading the chat as tail -f does, next to
// `cat` of a file of that size into one on the same disk.
func (r *run) groupIngest() error {
	src, dst := filepath.Join(r.main.home, "ingest-src"), filepath.Join(r.main.home, "ingest-dst")
	if err := os.WriteFile(src, []byte(ingestText()), 0600); err != nil {
		return err
	}
	var bare, followed, cat, stream, burst, burstFloor []time.Duration
	var lags []time.Duration
	for range r.o.Rounds {
		t, err := elapsed(CatFile(src, dst))
		if err != nil {
			return err
		}
		cat = append(cat, t)
		base := "http://" + r.models.Proxy.Addr() + "/v1"
		if t, err = elapsed(func() error { return streamFloor(r.ctx, base, promptBig) }); err != nil {
			return err
		}
		stream = append(stream, t)
		if t, err = elapsed(func() error { return streamFloor(r.ctx, base, promptBurst) }); err != nil {
			return err
		}
		burstFloor = append(burstFloor, t)
		if t, _, err = r.streamTurn(promptBurst, false); err != nil {
			return err
		}
		burst = append(burst, t)
		for _, withFollower := range []bool{false, true} {
			t, l, err := r.streamTurn(promptBig, withFollower)
			if err != nil {
				return err
			}
			if !withFollower {
				bare = append(bare, t)
				continue
			}
			followed = append(followed, t)
			lags = append(lags, l...)
		}
	}
	// The same pipeline at a pace it can keep: how far behind the model
	// a follower is when nothing queues up in front of the daemon.
	r.models.Proxy.SetPace(pacedEvery)
	defer r.models.Proxy.SetPace(0)
	var paced, pacedLags []time.Duration
	for range r.o.Rounds {
		t, l, err := r.streamTurn(promptPaced, true)
		if err != nil {
			return err
		}
		paced = append(paced, t)
		pacedLags = append(pacedLags, l...)
	}
	rate := func(ds []time.Duration) Value {
		return Value{float64(IngestSize) / summarize(ds).P50.Seconds(), Rate}
	}
	lag, plag := summarize(lags), summarize(pacedLags)
	r.add(
		Row{Key: "floor.cat", What: "cat of a 1 MiB file into a file on the same disk", Val: rate(cat)},
		Row{Key: "floor.stream", What: "the same 1 MiB reply streamed by the scripted model through the proxy to a client that only reads it", Val: rate(stream),
			Note: fmt.Sprintf("median of %d; what ingest can reach with this model and proxy", len(stream))},
		Row{Key: "ingest", What: "ingest of a 1 MiB reply streamed in 64 B pieces, prompt to reply", Val: rate(bare),
			Note: fmt.Sprintf("median of %d; %.2f× floor.stream's time", len(bare), summarize(bare).P50.Seconds()/summarize(stream).P50.Seconds()), Floor: "floor.cat"},
		Row{Key: "floor.burst", What: "the same reply written by the scripted model at once, through the proxy to a client that only reads it", Val: rate(burstFloor),
			Note: fmt.Sprintf("median of %d", len(burstFloor))},
		Row{Key: "ingest.burst", What: "ingest of the same reply written by the model at once: the daemon's own pace", Val: rate(burst),
			Note: fmt.Sprintf("median of %d; %.2f× floor.burst's time", len(burst), summarize(burst).P50.Seconds()/summarize(burstFloor).P50.Seconds()), Floor: "floor.cat"},
		Row{Key: "ingest.follow", What: "the same, with a follower reading chat over 9P as tail -f does", Val: rate(followed),
			Note: fmt.Sprintf("median of %d", len(followed)), Floor: "floor.cat"},
		Row{Key: "ingest.lag", What: "follower: piece seen in chat, after it left the model, p50", Val: dur(lag.P50),
			Note: fmt.Sprintf("p99 %s over %d pieces; polls every %v", dur(lag.P99), lag.N, ingestPoll)},
		Row{Key: "ingest.paced.lag", What: fmt.Sprintf("the same, a %d KiB reply paced at a piece each %v or more, p50", pacedSize>>10, pacedEvery), Val: dur(plag.P50),
			Note: fmt.Sprintf("p99 %s over %d pieces; %.2f MB/s; polls every %v", dur(plag.P99), plag.N,
				float64(pacedSize)/summarize(paced).P50.Seconds()/1e6, ingestPoll)},
	)
	return nil
}

// pacedEvery is the pace of the paced reply: a piece of 64 bytes at most
// every 100 µs, some 0.5 MB/s, a thousand times a fast model's.
const pacedEvery = 100 * time.Microsecond

// streamTurn runs a turn of a new session with the stream model, prompt
// answered, the chat followed as tail -f does if follow is set, and
// returns its time and, followed, how far behind the model the follower
// saw each piece.
func (r *run) streamTurn(prompt string, follow bool) (time.Duration, []time.Duration, error) {
	id, err := r.main.NewSession(r.ctx, "stream")
	if err != nil {
		return 0, nil, err
	}
	r.models.Proxy.Reset()
	r.models.Proxy.SetMarking(follow)
	defer r.models.Proxy.SetMarking(false)
	stop := make(chan struct{})
	var seen map[int]time.Time
	var ferr error
	var wg sync.WaitGroup
	if follow {
		wg.Go(func() { seen, ferr = followChat(r.ctx, r.main.Fsys, "s/"+id+"/chat", ingestPoll, stop) })
	}
	t, err := elapsed(func() error { return r.main.Turn(r.ctx, id, prompt) })
	close(stop)
	wg.Wait()
	if err == nil {
		err = ferr
	}
	var lags []time.Duration
	for i, at := range seen {
		if sent, ok := r.models.Proxy.Sent(i); ok {
			lags = append(lags, at.Sub(sent))
		}
	}
	return t, lags, err
}

// A load is what concurrent measured: the wall time, the latencies of
// all turns and of the turns after each session's first, and the
// daemon's CPU per turn.
type load struct {
	wall       time.Duration
	all, later Stats
	cpu        time.Duration
}

// concurrent runs turns turns in each of n new sessions, every session at
// once.
func (r *run) concurrent(d *Daemon, n, turns int) (load, error) {
	ids, err := r.sessions(d, n, "")
	if err != nil {
		return load{}, err
	}
	cpu0, err := CPU(d.Pid())
	if err != nil {
		return load{}, err
	}
	// A connection per 100 sessions, as from many clients: one connection
	// may have at most ninep.MaxPending requests running.
	conns := make([]*client.Fsys, (n+99)/100)
	for i := range conns {
		if conns[i], err = d.Dial(r.ctx); err != nil {
			return load{}, err
		}
		defer conns[i].Close()
	}
	var mu sync.Mutex
	var lat, later []time.Duration
	var first error
	var wg sync.WaitGroup
	start := time.Now()
	for i, id := range ids {
		wg.Add(1)
		fsys := conns[i%len(conns)]
		go func() {
			defer wg.Done()
			for k := range turns {
				t, err := elapsed(func() error { return d.turn(r.ctx, fsys, id, promptOne) })
				mu.Lock()
				lat = append(lat, t)
				if k > 0 {
					later = append(later, t)
				}
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	l := load{wall: time.Since(start), all: summarize(lat)}
	if len(later) > 0 {
		l.later = summarize(later)
	}
	cpu1, err := CPU(d.Pid())
	l.cpu = (cpu1 - cpu0) / time.Duration(n*turns)
	if first != nil {
		err = first
	}
	return l, err
}

// groupLoad: sessions turning all at once.
func (r *run) groupLoad() error {
	steady := ""
	if _, ok := r.row("turn"); ok {
		steady = "turn"
	}
	loads := []struct{ n, turns int }{{200, 3}, {1000, 1}}
	if r.o.Small {
		loads = []struct{ n, turns int }{{20, 3}, {50, 1}}
	}
	for _, c := range loads {
		l, err := r.concurrent(r.main, c.n, c.turns)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("load.%dx%d", c.n, c.turns)
		note := fmt.Sprintf("p50 %s; wall %s; daemon CPU %s per turn", dur(l.all.P50), dur(l.wall), dur(l.cpu))
		r.add(Row{Key: key + ".p99", What: fmt.Sprintf("%d sessions × %d turns at once, p99 of a turn", c.n, c.turns), Val: dur(l.all.P99), Note: note + "; floor: a steady turn", Floor: steady})
		if l.later.N > 0 {
			// Every session's first turn runs at the start, all at once,
			// and lays out what the session keeps on disk (its logs, its
			// tmp): the tail of .p99. This row is the rest.
			r.add(Row{Key: key + ".later.p99", What: "the same, the turns after each session's first, p99", Val: dur(l.later.P99),
				Note: fmt.Sprintf("p50 %s over %d turns; floor: a steady turn", dur(l.later.P50), l.later.N), Floor: steady})
		}
		r.add(Row{Key: key + ".wall", What: "the same, wall time", Val: dur(l.wall),
			Note: fmt.Sprintf("floor: %d fork/execs on %d CPUs", c.n*c.turns, runtime.NumCPU()), Floor: key + ".floor"})
		if f, ok := r.row("floor.fork"); ok && !r.isRef {
			r.add(Row{Key: key + ".floor", What: fmt.Sprintf("%d × floor.fork / %d CPUs", c.n*c.turns, runtime.NumCPU()),
				Val: Value{f.Val.X * float64(c.n*c.turns) / float64(runtime.NumCPU()), Time}})
		}
		m, err := Memory(r.main.Pid())
		if err != nil {
			return err
		}
		r.add(Row{Key: key + ".pss", What: "PSS of the daemon and its helpers after it", Val: bytesV(m.PSS), Note: "RSS " + bytesV(m.RSS).String()})
	}
	return nil
}

// groupScale: idle sessions by the 10, 100, 1,000 (and with Big 10,000)
// on a fresh daemon, with the memory each adds and the p99 of their
// creation, the first of them made before the memory is first measured;
// then a restart with all of them on disk, to the first answer.
func (r *run) groupScale() error {
	d, err := r.freshDaemon()
	if err != nil {
		return err
	}
	if err := d.Start(r.ctx); err != nil {
		return err
	}
	// One session first, outside the counts, once the daemon is idle
	// (trimmed): what the first s/new of a daemon brings in once (code
	// paged back in after the start-up trim, caches of the cwd check and
	// of the prompt's indexes) is no session's cost.
	if _, err := settle(r.ctx, d.Pid()); err != nil {
		return err
	}
	first, err := d.NewSession(r.ctx, "")
	if err != nil {
		return err
	}
	base, err := settle(r.ctx, d.Pid())
	if err != nil {
		return err
	}
	counts := []int{10, 100, 1000}
	if r.o.Small {
		counts = []int{10, 30}
	} else if r.o.Big {
		counts = append(counts, 10000)
	}
	ids := []string{first}
	prev := base
	for _, n := range counts {
		added := n - len(ids)
		var ds []time.Duration
		for len(ids) < n {
			var id string
			t, err := elapsed(func() (err error) { id, err = d.NewSession(r.ctx, ""); return err })
			if err != nil {
				return err
			}
			ds = append(ds, t)
			ids = append(ids, id)
		}
		m, err := settle(r.ctx, d.Pid())
		if err != nil {
			return err
		}
		st := summarize(ds)
		r.add(Row{Key: fmt.Sprintf("scale.%d", n), What: fmt.Sprintf("PSS per idle session, the %d added to reach %d", added, n),
			Val: bytesV((m.PSS - prev.PSS) / int64(added)),
			Note: fmt.Sprintf("RSS %s per session added; since the first: PSS %s per session, %s in all; s/new p99 %s",
				bytesV((m.RSS-prev.RSS)/int64(added)), bytesV((m.PSS-base.PSS)/int64(n-1)), bytesV(m.PSS), dur(st.P99))})
		prev = m
	}
	if r.isRef {
		return d.Stop() // it keeps no sessions on disk
	}
	if err := d.Stop(); err != nil {
		return err
	}
	start := time.Now()
	if err := d.Start(r.ctx); err != nil {
		return err
	}
	if err := d.Turn(r.ctx, ids[0], promptPlain); err != nil {
		return err
	}
	t := time.Since(start)
	floor := ""
	if _, ok := r.row("fresh.startup"); ok {
		floor = "fresh.startup"
	}
	m, err := settle(r.ctx, d.Pid())
	if err != nil {
		return err
	}
	r.add(Row{Key: "scale.restart", What: fmt.Sprintf("restart with %d sessions on disk, to the first answer", len(ids)), Val: dur(t),
		Note: "PSS after " + bytesV(m.PSS).String() + "; floor: start-up with none", Floor: floor})
	return d.Stop()
}

// streamFloor asks the streaming model at base (an OpenAI /v1 URL) for the
// 1 MiB reply (prompt promptBig or promptBurst), as the daemon does, and
// reads the response to its end without decoding it: the floor of any
// ingest through this model.
func streamFloor(ctx context.Context, base, prompt string) error {
	body := `{"model":"bench","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"` + prompt + `"}]}`
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/chat/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && (resp.StatusCode != http.StatusOK || n < IngestSize) {
		err = fmt.Errorf("stream floor: status %s, %d bytes", resp.Status, n)
	}
	return err
}
