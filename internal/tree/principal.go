package tree

// Who is asking. A 9P attach fixes it for every fid walked from that
// attach: the daemon's user (a nil *Principal) may do whatever the
// permission bits allow; code of the model, a Stage, may do only what
// the tree's Guard grants, whatever the bits say.
//
// The daemon learns who is asking from the kernel, never from the
// asker: the peer credentials of a unix-socket connection, or the pid a
// trusted FUSE bridge reads from a FUSE request on behalf of its caller
// (see internal/who). A stage cannot choose its principal.
type Principal struct {
	// Session is the id of the session whose stage this is; "" for a
	// sandboxed process whose session is unknown (its stage has ended,
	// or it is not ollie's), which may only read what is public.
	Session string
	// Hook marks a hook of the agent configuration (the user's own code,
	// run unsandboxed) and whatever it starts: it may do what the user
	// may, but answer a consent request, which only a person does.
	Hook bool
}

// Op is what a principal does to a node.
type Op uint8

const (
	OpRead   Op = 1 << iota // open for reading (a directory: list it)
	OpWrite                 // open for writing, truncate, wstat
	OpCreate                // create a file or directory in it (on the directory)
	OpRemove                // remove it, or rename it (on the node)
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpCreate:
		return "create"
	case OpRemove:
		return "remove"
	}
	return "op?"
}

// A Guard decides what a stage may do. path is the nodes walked from
// the root to the node acted on, root first; for OpCreate it ends with
// the directory created in. Allow returns nil or an error of kind
// errs.Permission whose text says what was refused.
//
// Guards must decide on node identity (which session a directory is),
// never on the names the asker used, so that a session reached by its
// name, its id or a job member's path is the same session.
type Guard interface {
	Allow(who Principal, path []Node, op Op) error
}
