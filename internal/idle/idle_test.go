package idle

import (
	"context"
	"testing"
	"time"
)

// A process that keeps a CPU busy is waited for, window after window;
// the first window in which it was idle ends the wait.
func TestWaitForAnIdleWindow(t *testing.T) {
	busy, looks := 3, 0
	cpu := func() time.Duration {
		looks++
		// Each look of a busy window reports a whole second more: far
		// over a quarter of the window, however slow the machine.
		if looks <= 2*busy {
			return time.Duration(looks) * time.Second
		}
		return time.Duration(2*busy) * time.Second
	}
	if !wait(context.Background(), cpu) {
		t.Fatal("wait gave up with ctx alive")
	}
	if want := 2 * (busy + 1); looks != want {
		t.Fatalf("%d looks at the CPU time, want %d: two per window, %d busy windows and an idle one", looks, want, busy)
	}
}

// A wait ends with its context, however busy the process is.
func TestWaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := time.Duration(0)
	cpu := func() time.Duration {
		n += time.Second
		if n > 10*time.Second {
			cancel()
		}
		return n
	}
	if wait(ctx, cpu) {
		t.Fatal("a busy process was found idle")
	}
}

// Later runs its work in order, and none of it once ctx is over.
func TestLaterRunsInOrderUntilItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan int, 3)
	Later(ctx, func() { ran <- 1 }, func() { ran <- 2; cancel() }, func() { ran <- 3 })
	for want := 1; want <= 2; want++ {
		if got := <-ran; got != want {
			t.Fatalf("work %d ran, want %d", got, want)
		}
	}
	// The third piece waits for an idle window first, and sees ctx over.
	time.Sleep(10 * Window)
	select {
	case got := <-ran:
		t.Fatalf("work %d ran after ctx ended", got)
	default:
	}
}

// Until waits for its time, or for the end of its context.
func TestUntil(t *testing.T) {
	start := time.Now()
	Until(context.Background(), start.Add(5*time.Millisecond))()
	if time.Since(start) < 5*time.Millisecond {
		t.Fatal("Until returned before its time")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { Until(ctx, time.Now().Add(time.Hour))(); close(done) }()
	<-done
}

// The process's own CPU time moves as it works.
func TestCPUTimeMoves(t *testing.T) {
	c0, end := cpuTime(), time.Now().Add(10*time.Second)
	for cpuTime()-c0 < time.Millisecond {
		if time.Now().After(end) {
			t.Fatalf("10 s of a busy loop, and the CPU time moved %v", cpuTime()-c0)
		}
	}
}
