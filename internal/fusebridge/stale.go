package fusebridge

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fs"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

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
func (n *node) withFid(ctx context.Context, op func(f *client.Fid, s *session) error) error {
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

// dropFid forgets f if it is still the node's fid, and clunks it. A
// request still using it fails with "unknown fid", which is what it would
// have met on the stale fid anyway, and retries.
func (n *node) dropFid(f *client.Fid) {
	n.mu.Lock()
	if n.fid != f {
		n.mu.Unlock()
		return
	}
	s := n.sess
	n.fid, n.sess = nil, nil
	n.mu.Unlock()
	if s != nil && f != s.root && !s.dead() {
		go f.Clunk(context.Background())
	}
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
