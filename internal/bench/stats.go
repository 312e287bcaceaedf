// Package bench measures operations for `ollie bench` and the Go
// benchmarks: per-operation wall times with their mean and percentiles,
// the floors to compare them with (round trips on a unix socket to an echo
// server that does nothing else), and the file operations a user makes.
//
//	st, err := bench.Measure(1000, bench.OpenReadClose("/mnt/ollie/help"))
//	fmt.Println(st.Mean, st.P50, st.P99)
//
// Numbers are only comparable within one run on one machine: compare a
// measurement with its floor, not with yesterday's.
package bench

import (
	"slices"
	"time"
)

// Stats summarizes the wall times of N runs of one operation.
type Stats struct {
	N    int
	Mean time.Duration
	P50  time.Duration
	P99  time.Duration
	Max  time.Duration
}

// Measure runs op n times, after n/10 (at least one) runs to warm caches
// and connections up, and returns the statistics of the timed runs. It
// stops at the first error.
func Measure(n int, op func() error) (Stats, error) {
	st, err := MeasureAll(n, op)
	if err != nil {
		return Stats{}, err
	}
	return st[0], nil
}

// rounds is how many slices MeasureAll cuts the runs of each operation
// into.
const rounds = 10

// MeasureAll measures several operations n times each, interleaved: in
// each of ten rounds every operation runs n/10 times in turn. A machine
// whose load changes during the run (other processes, frequency scaling)
// then affects every operation alike, and their ratios stay meaningful.
func MeasureAll(n int, ops ...func() error) ([]Stats, error) {
	n = max(n, 1)
	for _, op := range ops {
		for range max(n/10, 1) {
			if err := op(); err != nil {
				return nil, err
			}
		}
	}
	ds := make([][]time.Duration, len(ops))
	for r := range rounds {
		k := n/rounds + btoi(r < n%rounds)
		for i, op := range ops {
			for range k {
				start := time.Now()
				if err := op(); err != nil {
					return nil, err
				}
				ds[i] = append(ds[i], time.Since(start))
			}
		}
	}
	out := make([]Stats, len(ops))
	for i := range ops {
		out[i] = summarize(ds[i])
	}
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func summarize(ds []time.Duration) Stats {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	slices.Sort(ds)
	return Stats{
		N:    len(ds),
		Mean: sum / time.Duration(len(ds)),
		P50:  ds[len(ds)/2],
		P99:  ds[min(len(ds)-1, len(ds)*99/100)],
		Max:  ds[len(ds)-1],
	}
}

// Ratio is a/b, or 0 if b is 0.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
