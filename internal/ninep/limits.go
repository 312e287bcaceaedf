package ninep

import (
	"errors"

	"9fans.net/go/plan9"
)

// What one connection may hold. A client past a limit gets an Rerror for
// the request that would exceed it, and the conversation goes on; at
// hang-up everything it held is released (conn.hangup).
//
// Memory per connection is bounded by them: a fid costs a few hundred
// bytes (its path, its open handle, a directory snapshot while open), so
// MaxFids fids are some 30 MB at most. A request in a goroutine costs
// about 8 KiB (its goroutine's stack, its context) plus its buffer: a
// Tread's reply is allocated for its whole count before the handle
// blocks, and a Twrite holds its data. MaxPending and MaxPendingBytes
// bound both, to some 72 MiB. (60,000 blocking reads had cost 465 MB
// when nothing bounded them.)
const (
	// MaxFids is the most fids a connection may hold at once. The FUSE
	// bridge keeps two per node the kernel remembers and one per open
	// file; 65,536 is far more than a mount of the tree needs.
	MaxFids = 1 << 16

	// MaxPending is the most requests of a connection that may be running
	// in goroutines at once (blocking reads of wait, statewait, events,
	// writes that sync, opens that ask the network). A FUSE mount has one
	// outstanding per process blocked in the tree; 1,024 is room for as
	// many waiting readers. Tclunk and Tremove are not counted, so that a
	// client can always let go of what it holds: their number is bounded
	// by MaxFids. Nor is Tflush: a flush waiting for its request holds
	// only a tag, and tags are bounded by the protocol (65,536).
	MaxPending = 1024

	// MaxPendingBytes bounds the buffers of those requests: the counts of
	// their Treads (as cut to msize) and the data of their Twrites. It is
	// room for some 500 reads of 128 KiB, what FUSE asks for at a time.
	MaxPendingBytes = 64 << 20
)

var (
	errTooManyFids    = errors.New("too many fids")
	errTooManyPending = errors.New("too many outstanding requests")
)

// fidLimit reports whether r, a request of the reader that makes fids,
// would make one past MaxFids.
func (c *conn) fidLimit(r *request) error {
	var nf uint32
	switch r.typ {
	case plan9.Tattach:
		nf = r.fid
	case plan9.Tauth:
		nf = r.afid
	case plan9.Twalk:
		if r.newfid == r.fid {
			return nil
		}
		nf = r.newfid
	default:
		return nil
	}
	if _, ok := c.fids[nf]; !ok && len(c.fids) >= MaxFids {
		return errTooManyFids
	}
	return nil
}

// admit reserves a place for r, a request about to run in a goroutine,
// and returns what it reserved; the request frees it when it replies
// (conn.reply). It fails past MaxPending or MaxPendingBytes for any
// request but Tclunk and Tremove.
func (c *conn) admit(r *request) (cost int, err error) {
	switch r.typ {
	case plan9.Tread:
		cost = int(min(r.count, c.msize.Load()))
	case plan9.Twrite:
		cost = len(r.data)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	over := c.running >= MaxPending || c.pendingBytes+cost > MaxPendingBytes
	if over && r.typ != plan9.Tclunk && r.typ != plan9.Tremove {
		return 0, errTooManyPending
	}
	c.running++
	c.pendingBytes += cost
	return cost, nil
}
