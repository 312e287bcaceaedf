package bench

import (
	"errors"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	st := summarize(ds)
	if st.N != 100 || st.Mean != 50 || st.P50 != 51 || st.P99 != 100 || st.Max != 100 {
		t.Errorf("summarize(1..100) = %+v", st)
	}
}

// TestMeasureAll checks that every operation runs n times plus its
// warm-up, in rounds, and that an error stops the measurement.
func TestMeasureAll(t *testing.T) {
	var calls [2]int
	var order []int
	op := func(i int) func() error {
		return func() error {
			calls[i]++
			if len(order) == 0 || order[len(order)-1] != i {
				order = append(order, i)
			}
			return nil
		}
	}
	sts, err := MeasureAll(95, op(0), op(1))
	if err != nil {
		t.Fatal(err)
	}
	if sts[0].N != 95 || sts[1].N != 95 || calls[0] != 95+9 || calls[1] != 95+9 {
		t.Errorf("N = %d, %d; calls = %v", sts[0].N, sts[1].N, calls)
	}
	if len(order) != 2+2*rounds {
		t.Errorf("operations were not interleaved in %d rounds: %d runs of one operation", rounds, len(order))
	}
	boom := errors.New("boom")
	if _, err := MeasureAll(10, func() error { return boom }); err != boom {
		t.Errorf("MeasureAll of a failing operation = %v", err)
	}
}
