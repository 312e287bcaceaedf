// Package idle runs a process's background work when the process has a
// moment: the daemon's warming (the indexes of the prompt, the model's
// server, the sandbox's base and its resident helper) is for requests to
// come, and must not share the CPU with the ones being served.
//
// On two cores, a daemon that warmed everything at once as it started
// answered the first prompt of a script that started it 5 to 8 ms later
// than one that warmed nothing (docs/bench.md): the warming goroutines
// took the processors the first requests waited for. (What those
// requests need first, and is mostly waiting for another server, the
// daemon warms at once.) Work done later is not lost: each piece is also
// done on demand, by the first request that needs it, if it has not been
// done yet.
package idle

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// Window is how long a process is watched before a piece of work: the
// work starts after a Window in which the process used less than a
// quarter of one CPU. A turn against a quick model leaves the daemon
// waiting for a millisecond or two at a time; with a 2 ms window the
// work began inside such a turn and took the processors from its last
// requests. A model that thinks longer leaves room for it.
const Window = 10 * time.Millisecond

// busyShare: a process that used more than 1/busyShare of a CPU over a
// Window is busy.
const busyShare = 4

// Wait returns true once the process has been idle for a Window (see
// Window), false if ctx ends first.
func Wait(ctx context.Context) bool {
	return wait(ctx, cpuTime)
}

func wait(ctx context.Context, cpu func() time.Duration) bool {
	t := time.NewTimer(Window)
	defer t.Stop()
	for {
		c0, w0 := cpu(), time.Now()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if busyShare*(cpu()-c0) < time.Since(w0) {
			return true
		}
		t.Reset(Window)
	}
}

// Later runs work in a goroutine of its own, in order, each piece after
// the process was idle (Wait); what is left is dropped when ctx ends.
func Later(ctx context.Context, work ...func()) {
	go func() {
		for _, w := range work {
			if !Wait(ctx) {
				return
			}
			w()
		}
	}()
}

// Until is a piece of work for Later that only waits: for t, or for the
// end of ctx.
func Until(ctx context.Context, t time.Time) func() {
	return func() {
		tm := time.NewTimer(time.Until(t))
		defer tm.Stop()
		select {
		case <-ctx.Done():
		case <-tm.C:
		}
	}
}

// cpuTime is the CPU time the process has used, user and system, all
// threads.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
