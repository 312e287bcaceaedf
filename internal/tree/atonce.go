package tree

import "9fans.net/go/plan9"

// The 9P server serves an operation that finishes at once in the
// connection's reader, so that it costs no goroutine and no thread
// wake-up; anything else gets a goroutine of its own, so that it can
// block, and be flushed, without stalling the other requests of the
// connection (a FUSE mount has one). "At once" means it waits for nothing
// (a lock another request may hold, a turn, the network, a consent) and
// does not sync to disk: a pread of a local file or an openat counts, an
// fsync does not.
//
// Serving one that is not at once in the reader stalls every request
// behind it, and a flush cannot interrupt it. So nobody declares it:
// it is a property of the type, and the set of such types is closed.
// Only the node and handle types of this package listed below qualify,
// each because of what its code does, and the test is on the exact
// dynamic type: a type that embeds one of them and replaces a method (a
// Snapshot whose ReadAt blocks) is not one. A type of another package can
// never be: a file whose content takes a session's lock to render serves
// its reads at once only by returning a Snapshot rendered at open, and
// the open itself gets a goroutine.
//
// Walk and Stat are always served in the reader: their contracts (Node,
// Dir) forbid blocking. Writes, creates, removes and wstats never are:
// they change state, and most sync to disk (NAMESPACE rule 4).

// OpensAtOnce reports whether opening n in mode (a plan9 open mode)
// finishes at once.
func OpensAtOnce(n Node, mode uint8) bool {
	switch n.(type) {
	case *StaticDir:
		// The open of a directory is its List: a static table stats
		// its rows, which is cheap by Node's contract.
		return true
	case *DiskFile:
		// One openat to read. An open that writes may truncate, or read
		// a validated file whole to validate against.
		return (mode&3 == plan9.OREAD || mode&3 == plan9.OEXEC) && mode&plan9.OTRUNC == 0
	}
	return false
}

// Immediate reports whether every ReadAt and the Close of h finish at
// once.
func Immediate(h Handle) bool {
	switch h.(type) {
	case *Snapshot, *rwHandle:
		// Reads copy bytes fixed at open; Close does nothing.
		return true
	case ctlHandle:
		// Reads fail at once; Close does nothing.
		return true
	case *diskHandle:
		// A pread and a close(2) of a local file, with no lock. (A
		// rewriteHandle is not one: its reads take the lock its commits
		// hold across an fsync.)
		return true
	}
	return false
}

var (
	_ Handle = (*Snapshot)(nil)
	_ Handle = (*rwHandle)(nil)
	_ Handle = ctlHandle(nil)
	_ Handle = (*diskHandle)(nil)
	_ Dir    = (*StaticDir)(nil)
	_ File   = (*DiskFile)(nil)
)
