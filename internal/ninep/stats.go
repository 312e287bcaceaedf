package ninep

import "sync/atomic"

// Operation indexes for Stats.Ops.
const (
	opAttach = iota
	opWalk
	opOpen
	opCreate
	opRead
	opWrite
	opStat
	opWstat
	opRemove
	opClunk
	nOps
)

// OpNames names the entries of Stats.Ops.
var OpNames = [nOps]string{"attach", "walk", "open", "create", "read", "write", "stat", "wstat", "remove", "clunk"}

// Stats are the server's counters. All fields are updated atomically.
type Stats struct {
	Conns        atomic.Int64
	Ops          [nOps]atomic.Uint64
	BytesRead    atomic.Uint64
	BytesWritten atomic.Uint64
	// Pending is how many requests are running in goroutines now: those
	// that may block (a read of wait, a synced write). Flushed counts
	// the Tflushes that found their request still running and cancelled
	// it. With them a test can see that a read is outstanding before it
	// interrupts, and that the interruption went over the wire.
	Pending atomic.Int64
	Flushed atomic.Uint64
}

// TotalOps is the number of 9P requests served.
func (s *Stats) TotalOps() uint64 {
	var n uint64
	for i := range s.Ops {
		n += s.Ops[i].Load()
	}
	return n
}
