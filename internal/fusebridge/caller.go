package fusebridge

import (
	"context"
	"strconv"

	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/who"
)

// Who is asking. The bridge's own fids are the user's, and so are the
// requests of the user's processes. A request from a process that runs
// with no_new_privs (every sandboxed stage does, for good) goes instead
// through fids attached on that process's behalf ("pid=N"), which the
// daemon resolves from the kernel's account of N and then holds to its
// stage table. Such fids serve that one request and are never cached as
// a node's: a stage never uses the user's fids, the user never a stage's.
//
// This is enforced at open, not at read: the kernel may serve a read from
// its page cache, but only through a descriptor whose open the daemon
// allowed, and openCached (a stat instead of an open) is the user's only.

// stageCaller returns the pid of the process behind the FUSE request in
// ctx if the bridge cannot vouch for it. Requests the bridge makes on its
// own (no caller) are the user's.
func stageCaller(ctx context.Context) (int, bool) {
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Pid == 0 {
		return 0, false
	}
	nnp, ok := who.NoNewPrivs(int(c.Pid))
	// A caller whose status cannot be read is asked about: the daemon
	// refuses what it cannot identify.
	return int(c.Pid), nnp || !ok
}

// withCallerFid runs op with a fid for the node attached on behalf of pid,
// in a session of its own that rides on s.
func (n *node) withCallerFid(ctx context.Context, s *session, pid int, op func(f *client.Fid, s *session) error) error {
	root, err := s.conn.Attach(ctx, n.b.opts.Uname, "pid="+strconv.Itoa(pid))
	if err != nil {
		return err
	}
	defer func() { go root.Clunk(context.Background()) }()
	f := root
	if !n.IsRoot() {
		if f, err = root.Walk(ctx, client.SplitPath(n.path())...); err != nil {
			return err
		}
		defer func() { go f.Clunk(context.Background()) }()
	}
	return op(f, &session{conn: s.conn, root: root, via: s})
}

// current reports whether s is the live session, or rides on it (the
// fids of a caller the bridge does not vouch for).
func (b *bridge) current(s *session) bool {
	cur := b.cur.Load()
	return s != nil && (s == cur || s.via == cur)
}
