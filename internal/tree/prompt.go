package tree

import "9fans.net/go/plan9"

// Prompt is a set of a node's operations that finish at once: they wait
// for nothing (another request, a turn, the network, a consent) and do
// not sync to disk. A read of a local file or an open(2) counts as prompt;
// an fsync does not.
//
// The 9P server serves a prompt operation in the connection's reader, so
// it costs no goroutine and no thread wake-up; anything else gets a
// goroutine of its own, so that it can block, and be flushed, without
// stalling the other requests of the connection. Declaring an operation
// prompt that is not stalls every request behind it on that connection
// (a FUSE mount has one), and a flush cannot interrupt it.
type Prompt uint8

const (
	// PromptOpen: Open (of a Dir: List) returns at once.
	PromptOpen Prompt = 1 << iota
	// PromptRead: ReadAt of every handle of the open returns at once.
	PromptRead
	// PromptClose: Close of every handle of the open returns at once.
	PromptClose
)

// Prompter is implemented by nodes some of whose operations are prompt.
// A node that is not a Prompter may block in any of them. Writes, creates,
// removes and wstats are never taken as prompt: they change state, and
// most sync to disk before they return (NAMESPACE rule 4). Walk and Stat
// are always served at once (their contracts forbid blocking).
//
// The answer is declared where the handles are made, not on the handle:
// a handle type that embeds a prompt one (tree.Snapshot) and replaces
// its ReadAt by a blocking one must not inherit the promise. For the same
// reason a type that embeds a Prompter and changes Open must override
// Prompt.
type Prompter interface {
	// Prompt reports which operations of an open in mode (a plan9
	// open mode) are prompt.
	Prompt(mode uint8) Prompt
}

// PromptOf returns what n promises for an open in mode: nothing unless n
// is a Prompter.
func PromptOf(n Node, mode uint8) Prompt {
	if p, ok := n.(Prompter); ok {
		return p.Prompt(mode)
	}
	return 0
}

// Listing a static table stats its rows, which is prompt by Node's
// contract.
func (d *StaticDir) Prompt(uint8) Prompt { return PromptOpen | PromptRead | PromptClose }

// Prompt of a synthetic file is what its constructor declared (Prompts).
func (s *Synth) Prompt(uint8) Prompt { return s.Prompts }

// Prompt of a disk file: opening it to read is one openat; reads are
// preads of a local file (or of the content a rewriting handle holds);
// closing a file open to read is close(2). An open that writes may
// truncate, or read the file whole, and its close may commit (rewrite.go:
// fsync, rename, fsync), so it gets goroutines.
func (f *DiskFile) Prompt(mode uint8) Prompt {
	if (mode&3 == plan9.OREAD || mode&3 == plan9.OEXEC) && mode&plan9.OTRUNC == 0 {
		return PromptOpen | PromptRead | PromptClose
	}
	return PromptRead
}

var (
	_ Prompter = (*StaticDir)(nil)
	_ Prompter = (*Synth)(nil)
	_ Prompter = (*DiskFile)(nil)
)
