package tree

import (
	"context"

	"9fans.net/go/plan9"
)

// Node is anything in the tree.
//
// Stat must be cheap and free of side effects: it never consumes, never
// calls the network and never blocks (NAMESPACE rule 2). Its Qid.Path is
// the node's identity and never changes while the node exists. It fails
// only when the node is gone (a file removed on disk behind the tree).
type Node interface {
	Stat() (plan9.Dir, error)
}

// Dir is a directory node.
type Dir interface {
	Node
	// Walk returns the child called name. A missing child is an error of
	// kind errs.NotExist. Walk is never called with "." or "..".
	Walk(name string) (Node, error)
	// List returns the stats of the children in a stable order.
	List() ([]plan9.Dir, error)
}

// StatWalker is a Dir whose walk learns the child's stat anyway (a disk
// directory stats the name to know what it is). WalkStat returns both, so
// that a 9P walk costs one stat per name instead of two.
type StatWalker interface {
	WalkStat(name string) (Node, plan9.Dir, error)
}

// File is a node that can be opened for I/O.
type File interface {
	Node
	// Open prepares a handle for mode (plan9.OREAD, OWRITE, ORDWR, with
	// OTRUNC possibly set). Permission bits have already been checked.
	// Per-open state (snapshots, cursors) lives on the handle.
	Open(ctx context.Context, mode uint8) (Handle, error)
}

// Handle is one open of a File. Calls may run concurrently; a handle
// that cannot support that serializes itself. ctx is cancelled when the
// client flushes the request: a blocking read must return promptly then.
// As with io.WriterAt, WriteAt must not keep p: the server reuses it.
type Handle interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	WriteAt(ctx context.Context, p []byte, off int64) (int, error)
	Close() error
}

// An AnswerReader is a Handle whose reads make their bytes themselves
// (an answer computed when asked, after a wait): ReadAnswer returns at
// most n bytes at off, which the caller may keep but not modify. A
// server uses it instead of ReadAt so that a read that blocks holds no
// buffer of its whole count while it waits (a thousand clients blocked
// in reads of 128 KiB would otherwise hold 128 MB).
type AnswerReader interface {
	ReadAnswer(ctx context.Context, n int, off int64) ([]byte, error)
}

// Creator is a Dir in which files (or directories, when perm has
// plan9.DMDIR) can be created. The new node is returned already opened
// with mode, as Tcreate requires; for a directory the handle is nil.
type Creator interface {
	Create(ctx context.Context, name string, perm plan9.Perm, mode uint8) (Node, Handle, error)
}

// Remover is a node that can be removed. parent is the directory it was
// walked from.
type Remover interface {
	Remove(ctx context.Context) error
}

// Wstater is a node whose metadata can be changed. Fields of d that are
// not to change hold their "don't touch" values (^0 or ""), as in a
// Twstat; a name change is a rename within the same directory.
type Wstater interface {
	Wstat(ctx context.Context, d *plan9.Dir) error
}

// Documented nodes contribute rows to the generated help file.
type Documented interface {
	Help() []HelpRow
}

// HelpRow documents one path of the tree.
type HelpRow struct {
	Path string // relative to the node that returned it, e.g. "new" or "<id>/prompt"
	Mode string // r, w, rw, dir, exec ...
	Doc  string
}
