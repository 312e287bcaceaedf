package ninep

import (
	"io"
	"strconv"
	"strings"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// Who is asking: every fid carries the principal of its attach (nil for
// the daemon's user). Walks and stats are free to all; what a request
// does to a node (open, create, remove, wstat) is checked against the
// server's Guard when the fid's principal is a stage. The principal
// never changes for a fid or anything walked from it.
//
// A connection has a principal too, set by whoever accepted it from the
// kernel's account of the peer (ServeConnAs). A stage's connection gives
// every attach the stage's principal. A connection of the user's may
// attach on behalf of a caller with the attach name "pid=N": the FUSE
// bridge does so for the requests of processes it cannot vouch for, and
// the server asks Resolve who N is. A stage cannot use it to become
// someone else: its own connection's principal wins.

// pidAname is the attach name prefix of an attach on behalf of a process.
const pidAname = "pid="

// ServeConnAs is ServeConn for a connection whose peer is who (nil: the
// daemon's user).
func (s *Server) ServeConnAs(in io.ReadCloser, out io.WriteCloser, who *tree.Principal) {
	s.serveConn(in, out, who, nil)
}

// attachWho returns the principal of an attach with aname on c.
func (c *conn) attachWho(aname string) (*tree.Principal, error) {
	if !strings.HasPrefix(aname, pidAname) {
		return c.who, nil
	}
	if c.who != nil {
		return nil, errs.E(errs.Permission, "a sandboxed caller cannot attach on behalf of another process")
	}
	pid, err := strconv.Atoi(aname[len(pidAname):])
	if err != nil || pid <= 0 {
		return nil, errs.E(errs.Invalid, "bad attach name "+quote(aname))
	}
	if c.token != nil {
		// A bridge on another machine: its callers' pids name processes
		// there, not here. Whoever they are, they are not ollie's stages
		// and cannot be told apart from them: they may read what is public.
		return &tree.Principal{}, nil
	}
	if c.srv.Resolve == nil {
		return &tree.Principal{}, nil // nobody can say: treat it as a stage of no session
	}
	return c.srv.Resolve(pid), nil
}

// guard checks that f's principal may do op to the node at path.
func (c *conn) guard(f *fid, path []tree.Node, op tree.Op) error {
	if f.who == nil {
		return nil
	}
	if c.srv.Guard == nil {
		return errs.E(errs.Permission, "sandboxed code may not "+op.String()+" here")
	}
	return c.srv.Guard.Allow(*f.who, path, op)
}

// openOps are the operations an open in mode does.
func openOps(mode uint8) []tree.Op {
	var ops []tree.Op
	switch mode & 3 {
	case plan9.OREAD, plan9.OEXEC:
		ops = append(ops, tree.OpRead)
	case plan9.OWRITE:
		ops = append(ops, tree.OpWrite)
	case plan9.ORDWR:
		ops = append(ops, tree.OpRead, tree.OpWrite)
	}
	if mode&plan9.OTRUNC != 0 && mode&3 != plan9.OWRITE && mode&3 != plan9.ORDWR {
		ops = append(ops, tree.OpWrite)
	}
	if mode&plan9.ORCLOSE != 0 {
		ops = append(ops, tree.OpRemove)
	}
	return ops
}

// guardOpen checks an open of the node at path in mode.
func (c *conn) guardOpen(f *fid, path []tree.Node, mode uint8) error {
	if f.who == nil {
		return nil
	}
	for _, op := range openOps(mode) {
		if err := c.guard(f, path, op); err != nil {
			return err
		}
	}
	return nil
}

// guardWstat checks a wstat: a change of anything is a write, and a
// rename also creates a name in the directory.
func (c *conn) guardWstat(f *fid, path []tree.Node, d *plan9.Dir) error {
	if f.who == nil || d.IsNull() {
		return nil
	}
	if err := c.guard(f, path, tree.OpWrite); err != nil {
		return err
	}
	if d.Name != "" && len(path) > 1 {
		return c.guard(f, path[:len(path)-1], tree.OpCreate)
	}
	return nil
}
