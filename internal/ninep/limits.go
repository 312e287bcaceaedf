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
// bytes (its path, its open handle, a directory snapshot while open), a
// request in a goroutine about 8 KiB (the goroutine's stack, its context,
// its reply buffer) plus, for a Twrite, its message, at most msize. So
// MaxFids fids are some 30 MB at most, and MaxPending blocking reads about
// 8 MB (60,000 had cost 465 MB when nothing bounded them).
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

// admit reserves a place for a request about to run in a goroutine; the
// request frees it when it replies (conn.reply). It fails past MaxPending
// for any request but Tclunk and Tremove.
func (c *conn) admit(r *request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running >= MaxPending && r.typ != plan9.Tclunk && r.typ != plan9.Tremove {
		return errTooManyPending
	}
	c.running++
	return nil
}
