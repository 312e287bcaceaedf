package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"ollie.dev/ollie/internal/bench"
)

// A benchSection is one group of measurements of `ollie bench`. Sections
// register themselves in init, one file each (bench_9p.go, bench_fuse.go,
// ...), so adding one never edits this file. They run in the order of
// registration, which is the order of their file names.
type benchSection struct {
	name string // what -only selects
	doc  string // one line for `ollie help bench`
	// run measures; b starts and stops what it needs (a daemon, a mount).
	run func(b *benchEnv) ([]benchRow, error)
}

// A benchRow is one measured operation. A row may name the row it is
// compared with (its floor or reference) and the ratio it should stay
// under.
type benchRow struct {
	key   string // how other rows refer to this one: "9p.floor4"
	op    string // what was measured, as the table shows it
	stats bench.Stats
	ref   string  // key of the row to compare with; "" for none
	goal  float64 // the largest acceptable ratio to ref; 0 for none
	// value, when set, is shown instead of the time columns: a measure
	// that is not a time distribution (bytes, a wall time, a derived
	// difference), with its own verdict if it has a goal.
	value string
}

// A benchOp is an operation to measure into a benchRow.
type benchOp struct {
	key, op string
	run     func() error
	ref     string
	goal    float64
}

// measureRows measures ops, interleaved (see bench.MeasureAll).
func measureRows(b *benchEnv, ops []benchOp) ([]benchRow, error) {
	runs := make([]func() error, len(ops))
	for i, o := range ops {
		runs[i] = o.run
	}
	sts, err := bench.MeasureAll(b.n, runs...)
	if err != nil {
		return nil, err
	}
	rows := make([]benchRow, len(ops))
	for i, o := range ops {
		rows[i] = benchRow{key: o.key, op: o.op, stats: sts[i], ref: o.ref, goal: o.goal}
	}
	return rows, nil
}

var benchSections []*benchSection

func registerBench(s *benchSection) { benchSections = append(benchSections, s) }

var benchFlags struct {
	n          int
	only       string
	cpuprofile string
}

func init() {
	register(&command{
		name:  "bench",
		args:  "[-n N] [-only SECTION,...] [-cpuprofile FILE]",
		short: "measure the 9P server and the FUSE mount against their floors",
		long: `Bench starts a private daemon (in a temporary home, so your sessions and
files are not touched), measures each operation N times after a warm-up,
and prints one table: mean, median and 99th percentile per operation, and
for operations with a floor or reference, the ratio to it and the goal.
Numbers compare within one run on one machine. See docs/bench.md.`,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&benchFlags.n, "n", 2000, "run each operation `N` times")
			fs.StringVar(&benchFlags.only, "only", "", "run only the named `SECTIONS` (comma-separated): "+sectionNames())
			fs.StringVar(&benchFlags.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run (daemon and mount included) to `FILE`")
		},
		run:      runBench,
		noConfig: true,
	})
}

func sectionNames() string {
	var names []string
	for _, s := range benchSections {
		names = append(names, s.name)
	}
	return strings.Join(names, ",")
}

func runBench(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if benchFlags.n < 1 {
		return usagef("-n must be at least 1")
	}
	sections, err := selectSections(benchFlags.only)
	if err != nil {
		return err
	}
	b, err := newBenchEnv(ctx, benchFlags.n, env)
	if err != nil {
		return err
	}
	defer b.close()
	if benchFlags.cpuprofile != "" {
		f, err := os.Create(benchFlags.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(env.Stdout, "ollie bench: n=%d, %s/%s, %d CPUs, GOMAXPROCS=%d, %s\n\n",
		b.n, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	var rows []benchRow
	var failed []string
	for _, s := range sections {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rs, err := s.run(b)
		if err != nil {
			fmt.Fprintf(env.Stderr, "ollie bench: %s: %v\n", s.name, err)
			failed = append(failed, s.name)
			continue
		}
		rows = append(rows, rs...)
		printRows(env.Stdout, s.name, rs, rows)
	}
	if len(failed) > 0 {
		return fmt.Errorf("sections failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

func selectSections(only string) ([]*benchSection, error) {
	if only == "" {
		return benchSections, nil
	}
	var out []*benchSection
	for _, name := range strings.Split(only, ",") {
		i := slices.IndexFunc(benchSections, func(s *benchSection) bool { return s.name == name })
		if i < 0 {
			return nil, usagef("unknown section %q (have %s)", name, sectionNames())
		}
		out = append(out, benchSections[i])
	}
	return out, nil
}

// printRows prints one section's rows; all holds every row so far, for
// references across sections.
func printRows(w io.Writer, section string, rows, all []benchRow) {
	width := 0
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r.op))
	}
	fmt.Fprintf(w, "%-12s %-*s %9s %9s %9s %9s  %s\n", section, width, "operation", "mean", "p50", "p99", "max", "mean ratio to, goal")
	for _, r := range rows {
		if r.value != "" {
			pad := width - utf8.RuneCountInString(r.op)
			fmt.Fprintf(w, "%-12s %s%*s %s\n", r.key, r.op, pad, "", r.value)
			continue
		}
		cmp := ""
		if i := slices.IndexFunc(all, func(o benchRow) bool { return o.key == r.ref }); r.ref != "" && i >= 0 {
			x := bench.Ratio(r.stats.Mean, all[i].stats.Mean)
			cmp = fmt.Sprintf("%.2fx %s (p50 %.2fx)", x, all[i].key, bench.Ratio(r.stats.P50, all[i].stats.P50))
			if r.goal > 0 {
				verdict := "met"
				if x > r.goal {
					verdict = "MISSED"
				}
				cmp += fmt.Sprintf(", goal <= %gx: %s", r.goal, verdict)
			}
		}
		pad := width - utf8.RuneCountInString(r.op)
		fmt.Fprintf(w, "%-12s %s%*s %9s %9s %9s %9s  %s\n", r.key, r.op, pad, "", us(r.stats.Mean), us(r.stats.P50), us(r.stats.P99), us(r.stats.Max), cmp)
	}
	fmt.Fprintln(w)
}

// us formats a duration in microseconds, the unit of everything here.
func us(d time.Duration) string { return fmt.Sprintf("%.1fus", float64(d.Nanoseconds())/1000) }
