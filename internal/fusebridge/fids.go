package fusebridge

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fs"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// The fids of a node, guarded by node.mu:
//
//   - fid, walked to the node's path when first needed and kept until the
//     kernel forgets the node. Lookups of children walk from it, stats use
//     it. It is never opened.
//   - spare, a clone of fid walked in the background after each open, so
//     that the next open is one round trip (Topen) instead of two (Twalk
//     to clone, Topen). An open fid cannot be reused, so each open uses
//     one up.
//
// Both belong to sess. After a reconnect they are stale and simply
// forgotten (their connection is dead: nothing to clunk). When either
// changes, the old ones are clunked in the background, since nobody waits
// for a clunk's answer.

// walked returns the node's fid in the current session, walking to the
// node's path if it has none or only a stale one.
func (n *node) walked(ctx context.Context) (*client.Fid, *session, error) {
	s, err := n.b.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	n.mu.Lock()
	if n.sess == s && n.fid != nil {
		f := n.fid
		n.mu.Unlock()
		return f, s, nil
	}
	n.mu.Unlock()
	var f *client.Fid
	if n.IsRoot() {
		f = s.root
	} else if f, err = s.root.Walk(ctx, client.SplitPath(n.path())...); err != nil {
		return nil, nil, err
	}
	n.mu.Lock()
	if n.sess == s && n.fid != nil {
		// A concurrent walk got there first.
		cur := n.fid
		n.mu.Unlock()
		if f != s.root {
			go f.Clunk(context.Background())
		}
		return cur, s, nil
	}
	n.fid, n.spare, n.sess = f, nil, s
	n.mu.Unlock()
	return f, s, nil
}

// replaceFid makes f, of session s, the node's fid, dropping the old ones.
func (n *node) replaceFid(f *client.Fid, s *session) {
	n.mu.Lock()
	old, spare, olds := n.fid, n.spare, n.sess
	n.fid, n.spare, n.sess = f, nil, s
	n.mu.Unlock()
	if old != f {
		clunk(olds, old, spare)
	} else {
		clunk(olds, spare)
	}
}

// dropFid forgets f and its spare if f is still the node's fid, and
// clunks them. A request still using f fails with "unknown fid", which is
// what it would have met on the stale fid anyway, and retries.
func (n *node) dropFid(f *client.Fid) {
	n.mu.Lock()
	if n.fid != f {
		n.mu.Unlock()
		return
	}
	s, spare := n.sess, n.spare
	n.fid, n.spare, n.sess = nil, nil, nil
	n.mu.Unlock()
	clunk(s, f, spare)
}

// OnForget clunks the fids once the kernel has forgotten the node.
func (n *node) OnForget() {
	n.mu.Lock()
	f, spare, s := n.fid, n.spare, n.sess
	n.fid, n.spare, n.sess = nil, nil, nil
	n.mu.Unlock()
	clunk(s, f, spare)
}

// clunk clunks the fids of s in the background, except its root.
func clunk(s *session, fids ...*client.Fid) {
	if s == nil || s.dead() {
		return
	}
	for _, f := range fids {
		if f != nil && f != s.root {
			go f.Clunk(context.Background())
		}
	}
}

// openable returns a fid to open, cloned from nf (the node's fid in s):
// the spare if there is one, else a clone made now. Either way it walks
// the next spare in the background.
func (n *node) openable(ctx context.Context, nf *client.Fid, s *session) (*client.Fid, error) {
	var f *client.Fid
	n.mu.Lock()
	if n.fid == nf && n.sess == s { // else nf was replaced meanwhile
		f, n.spare = n.spare, nil
	}
	n.mu.Unlock()
	go n.refill(nf, s)
	if f != nil {
		return f, nil
	}
	return nf.Walk(ctx)
}

// refill walks a spare from nf, unless the node has one or moved on.
func (n *node) refill(nf *client.Fid, s *session) {
	n.mu.Lock()
	done := n.spare != nil || n.fid != nf || n.sess != s
	n.mu.Unlock()
	if done {
		return
	}
	f, err := nf.Walk(context.Background())
	if err != nil {
		return
	}
	n.mu.Lock()
	if n.spare == nil && n.fid == nf && n.sess == s {
		n.spare = f
		f = nil
	}
	n.mu.Unlock()
	clunk(s, f)
}

// withFid runs op with the node's fid.
//
// A cached fid can be stale even on a live connection: a server backed by
// a disk directory names the file of a fid by its path, and the file (or a
// directory above it) may have been renamed since, through another fid or
// on disk behind the daemon's back. The inode keeps its number (the qid
// path is stable), so the kernel keeps the node and, without this, its dead
// fid. When op fails with "file not found" on a cached fid that no longer
// stats either, the node walks its path afresh and op runs once more. A
// fid that still stats means the error was real; that costs one Tstat, on
// the failure path only.
//
// op runs with the fids of the caller of the FUSE request in ctx: for a
// caller the bridge does not vouch for, fids attached on its behalf
// (caller.go). Walks and stats, which the daemon does not guard, use
// withOwnFid instead and skip the cost of asking who the caller is.
func (n *node) withFid(ctx context.Context, op func(f *client.Fid, s *session) error) error {
	if pid, ok := stageCaller(ctx); ok {
		s, err := n.b.session(ctx)
		if err != nil {
			return err
		}
		return n.withCallerFid(ctx, s, pid, op)
	}
	return n.withOwnFid(ctx, op)
}

// withOwnFid runs op with the node's own fid, the user's.
func (n *node) withOwnFid(ctx context.Context, op func(f *client.Fid, s *session) error) error {
	s, err := n.b.session(ctx)
	if err != nil {
		return err
	}
	n.mu.Lock()
	f := n.fid
	if n.sess != s {
		f = nil
	}
	n.mu.Unlock()
	if f == nil || n.IsRoot() {
		if f, s, err = n.walked(ctx); err != nil {
			return err
		}
		return op(f, s)
	}
	err = op(f, s)
	if !errs.Is(err, errs.NotExist) {
		return err
	}
	if _, serr := f.Stat(ctx); serr == nil {
		return err
	}
	n.dropFid(f)
	if f, s, err = n.walked(ctx); err != nil {
		return err
	}
	return op(f, s)
}

// dropFids drops the fids of ino and everything below it: after a rename
// through the mount they name the old path, and the next request walks
// the new one instead of failing once first.
func dropFids(ino *fs.Inode) {
	if ino == nil {
		return
	}
	if n, ok := ino.Operations().(*node); ok {
		n.mu.Lock()
		f := n.fid
		n.mu.Unlock()
		if f != nil {
			n.dropFid(f)
		}
	}
	for _, c := range ino.Children() {
		dropFids(c)
	}
}
