package tree

// Capabilities a Handle may have beyond Handle. The 9P server looks for
// them on the open handle of a Twstat; each implementation is checked at
// compile time (var _ below, and next to the handles of other packages),
// so that a method renamed or given another signature fails the build
// instead of silently losing the capability.

// Truncater is a handle that serves a wstat of length itself, so that a
// truncate through an open file (what FUSE sends for O_TRUNC) reaches it
// rather than the node.
type Truncater interface {
	Handle
	Truncate(size int64) error
}

// Syncer is a handle that, on a null wstat (the 9P fsync), makes what was
// written durable, or reports an error it would otherwise discover only
// at clunk, when no one can hear it.
type Syncer interface {
	Handle
	Sync() error
}

var (
	_ Truncater = (*diskHandle)(nil)
	_ Syncer    = (*diskHandle)(nil)
	_ Truncater = (*rewriteHandle)(nil)
	_ Syncer    = (*rewriteHandle)(nil)
	_ Truncater = (*Rewrite)(nil)
	_ Syncer    = (*Rewrite)(nil)
)
