package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/sandbox"
)

// Options of a Run.
type Options struct {
	Exe    string   // the ollie binary: daemon, model, mount, echo floor
	Env    []string // added to the environment of every process started
	N      int      // runs of each small operation (9P, FUSE, creation)
	Turns  int      // timed turns of each kind
	Rounds int      // fresh daemons started, ingests streamed, per kind
	Big    bool     // also 10,000 idle sessions and a restart with them
	MCP    bool     // also the MCP group (needs node and server-everything)
	// Small shrinks the session counts of the load and scale rows (to
	// 20 × 3, 50 × 1, and 10 and 30 idle sessions): a smoke test.
	Small bool
	Only  []string // groups to run; nil for all
	Ref   string   // the reference daemon's binary (olliesrv); "" for none
	Log   io.Writer
	// Keep leaves the run's directory (every process's log, the
	// daemons' homes) in place, and says where it is.
	Keep bool
	// DaemonProfiles, if set, is a directory where each of ollie's
	// daemons writes its CPU, heap, blocking and mutex profiles when it
	// stops (NAME.cpu, .mem, .block, .mutex; NAME the daemon's).
	DaemonProfiles string
}

// Groups are the sections of a run, in order; Options.Only selects some.
// The last, mcp, runs only when named or with Options.MCP.
var Groups = []string{"9p", "fuse", "session", "turn", "fresh", "ingest", "load", "scale", "mcp"}

// A Row is one line of the table.
type Row struct {
	Key   string // what other rows and docs call it
	What  string
	Val   Value
	Note  string // p99, wall time, CPU, ...
	Floor string // the key of the row it is compared with; "" for none
}

// Value kinds.
const (
	Time  = iota // seconds
	Bytes        // bytes
	Rate         // bytes per second: higher is better
	Count        // tokens
)

// A Value is a measure of some kind.
type Value struct {
	X    float64
	Kind int
}

func dur(d time.Duration) Value { return Value{d.Seconds(), Time} }
func bytesV(n int64) Value      { return Value{float64(n), Bytes} }

func (v Value) String() string {
	switch v.Kind {
	case Bytes:
		if v.X >= 10<<20 || v.X <= -10<<20 {
			return fmt.Sprintf("%.1f MB", v.X/(1<<20))
		}
		return fmt.Sprintf("%.1f KB", v.X/(1<<10))
	case Rate:
		return fmt.Sprintf("%.2f MB/s", v.X/(1<<20))
	case Count:
		return fmt.Sprintf("%.0f", v.X)
	}
	switch s := v.X; {
	case s < 1e-3:
		return fmt.Sprintf("%.1f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2f ms", s*1e3)
	default:
		return fmt.Sprintf("%.2f s", s)
	}
}

// Cost is v over w as a cost: for a rate, w over v. Above 1 is worse.
func (v Value) Cost(w Value) float64 {
	if v.X == 0 || w.X == 0 {
		return 0
	}
	if v.Kind == Rate {
		return w.X / v.X
	}
	return v.X / w.X
}

// A run is the state one Run shares between its groups.
type run struct {
	ctx    context.Context
	o      Options
	dir    string
	models *Models
	main   *Daemon // the daemon the 9P, FUSE, session, turn, ingest and load rows use
	echo   *Echo
	rows   []Row
	undo   []func()
	fresh  int // homes made by freshDaemon
	// daemonExe is the copy of Options.Exe the daemons run.
	daemonExe string

	// With Options.Ref, each group runs again against the reference
	// right after ollie's (isRef set, main the reference's), its rows in
	// refRows.
	isRef      bool
	refBin     string
	ollieMain  *Daemon
	refMain    *Daemon
	refRows    []Row
	refSkipped []string
}

// Run measures, and writes the table to w as Markdown.
func Run(ctx context.Context, o Options, w io.Writer) error {
	o.N, o.Turns, o.Rounds = max(o.N, 1), max(o.Turns, 1), max(o.Rounds, 1)
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, g := range o.Only {
		if !slices.Contains(Groups, g) {
			return fmt.Errorf("unknown group %q (have %s)", g, strings.Join(Groups, ","))
		}
	}
	// Under /tmp, not $TMPDIR, so the socket paths stay short.
	dir, err := os.MkdirTemp("/tmp", "ollie-bench")
	if err != nil {
		return err
	}
	r := &run{ctx: ctx, o: o, dir: dir}
	defer func() {
		for i := len(r.undo) - 1; i >= 0; i-- {
			r.undo[i]()
		}
		unmountUnder(dir) // what a daemon killed after its grace left
		if o.Keep {
			fmt.Fprintf(o.Log, "ollie bench: the run's files are in %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	if err := r.setup(); err != nil {
		return err
	}
	r.ollieMain = r.main
	if o.Ref != "" {
		if err := r.startRef(); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	for _, g := range Groups {
		if o.Only != nil && !slices.Contains(o.Only, g) || o.Only == nil && g == "mcp" && !o.MCP {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(o.Log, "ollie bench: %s\n", g)
		start := time.Now()
		if err := groupFuncs[g](r); err != nil {
			return fmt.Errorf("%s: %w", g, err)
		}
		fmt.Fprintf(o.Log, "ollie bench: %s done in %v\n", g, time.Since(start).Round(time.Millisecond))
		if o.Ref == "" || !slices.Contains(refGroups, g) {
			continue
		}
		start = time.Now()
		r.isRef, r.main = true, r.refMain
		err := groupFuncs[g](r)
		r.isRef, r.main = false, r.ollieMain
		if err != nil {
			// The reference is not ours to fix: its failures leave its
			// column empty and are reported, the run goes on.
			fmt.Fprintf(o.Log, "ollie bench: %s, reference: %v\n", g, err)
			r.refSkipped = append(r.refSkipped, fmt.Sprintf("%s (%v)", g, firstLine(err.Error())))
			continue
		}
		fmt.Fprintf(o.Log, "ollie bench: %s, reference, done in %v\n", g, time.Since(start).Round(time.Millisecond))
	}
	r.print(w)
	return nil
}

var groupFuncs = map[string]func(*run) error{
	"9p": (*run).group9P, "fuse": (*run).groupFUSE, "session": (*run).groupSession, "turn": (*run).groupTurn,
	"fresh": (*run).groupFresh, "ingest": (*run).groupIngest, "load": (*run).groupLoad, "scale": (*run).groupScale,
	"mcp": (*run).groupMCP,
}

func (r *run) onClose(f func()) { r.undo = append(r.undo, f) }

func (r *run) add(rows ...Row) {
	if r.isRef {
		r.refRows = append(r.refRows, rows...)
		return
	}
	r.rows = append(r.rows, rows...)
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func (r *run) row(key string) (Row, bool) {
	i := slices.IndexFunc(r.rows, func(x Row) bool { return x.Key == key })
	if i < 0 {
		return Row{}, false
	}
	return r.rows[i], true
}

// setup starts the scripted models, the echo floor and the main daemon.
func (r *run) setup() error {
	// The daemons run a copy of the binary: the pages of the model, mount
	// and echo processes' binary are then not shared with theirs, and do
	// not lower the daemon's PSS.
	r.daemonExe = filepath.Join(r.dir, "ollie-daemon")
	if err := copyExe(r.o.Exe, r.daemonExe, true); err != nil {
		return err
	}
	var err error
	if r.models, err = startModels(r.o.Exe, r.dir, r.o.Env); err != nil {
		return err
	}
	r.onClose(r.models.Close)
	sock := filepath.Join(r.dir, "echo.sock")
	p, err := startProc("echo", r.dir, r.o.Env, r.o.Exe, "benchecho", sock)
	if err != nil {
		return err
	}
	r.onClose(func() { p.Stop(time.Second) })
	if err := p.waitSocket(sock, startTimeout); err != nil {
		return err
	}
	if r.echo, err = DialEcho(sock); err != nil {
		return err
	}
	r.onClose(func() { r.echo.Close() })
	if r.main, err = r.daemon("main"); err != nil {
		return err
	}
	return r.main.Start(r.ctx)
}

// daemon lays out a daemon in a directory of its own, to be stopped at
// the end of the run.
func (r *run) daemon(name string) (*Daemon, error) {
	dir := filepath.Join(r.dir, name)
	newD := newDaemon
	if r.isRef {
		dir = filepath.Join(r.dir, "ref-"+name)
		newD = func(_, dir string, env []string, m *Models) (*Daemon, error) {
			return newRefDaemon(r.refBin, dir, env, m)
		}
	}
	if err := os.Mkdir(dir, 0700); err != nil {
		return nil, err
	}
	d, err := newD(r.daemonExe, dir, r.o.Env, r.models)
	if err != nil {
		return nil, err
	}
	if p := r.o.DaemonProfiles; p != "" && !r.isRef {
		base := filepath.Join(p, name)
		d.argv = append(d.argv, "-cpuprofile", base+".cpu", "-memprofile", base+".mem",
			"-blockprofile", base+".block", "-mutexprofile", base+".mutex")
	}
	r.onClose(func() { d.Stop() })
	return d, nil
}

// print writes the header and the table.
func (r *run) print(w io.Writer) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "ollie bench on %s: %s/%s, %d CPUs, %s, %s; -n %d -turns %d -rounds %d",
		host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 MST"),
		r.o.N, r.o.Turns, r.o.Rounds)
	if r.o.Big {
		fmt.Fprint(w, " -big")
	}
	if r.o.Ref != "" {
		fmt.Fprintf(w, " -ref %s", r.o.Ref)
	}
	fmt.Fprint(w, "\n\n| row | ollie | floor | ratio to floor | reference | ollie / reference | note |\n|---|---|---|---|---|---|---|\n")
	for _, x := range r.rows {
		floor, ratio := "", ""
		if f, ok := r.row(x.Floor); ok && x.Floor != "" {
			floor = fmt.Sprintf("%s (`%s`)", f.Val, f.Key)
			ratio = fmt.Sprintf("%.2f", x.Val.Cost(f.Val))
		}
		ref, refRatio := "", ""
		if i := slices.IndexFunc(r.refRows, func(y Row) bool { return y.Key == x.Key }); i >= 0 {
			ref = r.refRows[i].Val.String()
			refRatio = fmt.Sprintf("%.2f", x.Val.Cost(r.refRows[i].Val))
		}
		fmt.Fprintf(w, "| `%s` %s | %s | %s | %s | %s | %s | %s |\n", x.Key, x.What, x.Val, floor, ratio, ref, refRatio, x.Note)
	}
	if len(r.refSkipped) > 0 {
		fmt.Fprintf(w, "\nNot measured on the reference: %s.\n", strings.Join(r.refSkipped, "; "))
	}
}

// copyExe copies the executable exe to dst and, with helper, the sandbox
// helper beside exe (if there is one) beside dst.
func copyExe(exe, dst string, helper bool) error {
	if err := copyFile(exe, dst); err != nil {
		return err
	}
	if h := sandbox.HelperFor(exe); helper && h != exe {
		return copyFile(h, filepath.Join(filepath.Dir(dst), sandbox.HelperName))
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	// On the disk before the daemon starts: its writeback, tens of MB,
	// is not the measured start's to share the disk with.
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// unmountUnder detaches every mount at or under dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		// Spaces and the like in a mount point are octal escapes; the
		// run's directories have none.
		if p := f[1]; p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		syscall.Unmount(p, syscall.MNT_DETACH)
	}
}
