package ns

import "ollie.dev/ollie/internal/tree"

// The handles of this package that serve a wstat themselves: a length
// through the open file (tree.Truncater), a null wstat, the 9P fsync
// (tree.Syncer). Checked here at compile time: the 9P server finds them
// by interface, so a method that drifted from the interface would
// silently stop being called.
var (
	_ tree.Truncater = (*rwText)(nil)
	_ tree.Syncer    = (*rwText)(nil)
	_ tree.Syncer    = (*msgHandle)(nil)
	_ tree.Syncer    = (*cloneFile)(nil)
)
