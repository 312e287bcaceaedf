package ninep

import (
	"context"
	"errors"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

var (
	errDuplicateOpen = errors.New("duplicate open")
	errIsDir         = errors.New("is a directory")
	errCreateNonDir  = errors.New("create in non-directory")
	errNotOpenWrite  = errors.New("not open for write")
)

// prompt reports whether r, a request on f, finishes at once, so that
// the reader serves it itself. Stat never blocks (tree.Node); an open, or
// the reads and close of an open handle, do when their type says so
// (tree.OpensAtOnce, tree.Immediate); a directory's reads come from the
// snapshot taken at open. Writes, creates, removes and wstats always get
// a goroutine.
func (c *conn) prompt(r *request, f *fid) bool {
	switch r.typ {
	case plan9.Tstat:
		return true
	case plan9.Topen:
		return tree.OpensAtOnce(f.node(), r.mode)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.typ {
	case plan9.Tread:
		return f.h == nil || tree.Immediate(f.h)
	case plan9.Tclunk:
		return !f.rclose && (f.h == nil || tree.Immediate(f.h))
	}
	return false
}

// run serves r, a request on f, appending its reply to b. A Tclunk or
// Tremove holds the reference to f that the fid table had, and drops it.
func (c *conn) run(ctx context.Context, r *request, f *fid, b []byte) []byte {
	start := len(b)
	var err error
	switch r.typ {
	case plan9.Topen:
		b, err = c.open(ctx, r, f, b)
	case plan9.Tcreate:
		b, err = c.create(ctx, r, f, b)
	case plan9.Tread:
		b, err = c.read(ctx, r, f, b)
	case plan9.Twrite:
		b, err = c.write(ctx, r, f, b)
	case plan9.Tstat:
		b, err = c.stat(r, f, b)
	case plan9.Twstat:
		if err = c.wstat(ctx, r, f); err == nil {
			b = empty(b, plan9.Rwstat, r.tag)
		}
	case plan9.Tclunk:
		// The fid is gone even when the close fails (clunk(5)).
		if err = c.drop(f); err == nil {
			b = empty(b, plan9.Rclunk, r.tag)
		}
	case plan9.Tremove:
		err = c.remove(ctx, f)
		c.drop(f)
		if err == nil {
			b = empty(b, plan9.Rremove, r.tag)
		}
	}
	if err != nil {
		c.reportErr(r, f, err)
	}
	return c.fit(b, start, r.tag, err)
}

// allowed checks the owner permission bits of st against an open mode.
// Every file belongs to the daemon's user, so owner bits are the whole story.
func allowed(st plan9.Dir, mode uint8) error {
	var need plan9.Perm
	switch mode & 3 {
	case plan9.OREAD:
		need = 0400
	case plan9.OWRITE:
		need = 0200
	case plan9.ORDWR:
		need = 0600
	case plan9.OEXEC:
		need = 0100
	}
	if mode&plan9.OTRUNC != 0 {
		need |= 0200
	}
	if st.Mode&need != need {
		switch {
		case need&0200 != 0 && st.Mode&0200 == 0:
			return errs.E(errs.Permission, st.Name+" is not writable")
		case need&0400 != 0 && st.Mode&0400 == 0:
			return errs.E(errs.Permission, st.Name+" is not readable")
		}
		return errs.E(errs.Permission, st.Name)
	}
	return nil
}

func (c *conn) open(ctx context.Context, r *request, f *fid, b []byte) ([]byte, error) {
	f.mu.Lock()
	omode, qid, path := f.omode, f.qid, f.path
	f.mu.Unlock()
	n := path[len(path)-1]
	switch {
	case omode != -1:
		return b, errDuplicateOpen
	case qid.Type&plan9.QTDIR != 0 && r.mode&^plan9.ORCLOSE != plan9.OREAD:
		return b, errIsDir
	}
	if err := c.guardOpen(f, path, r.mode); err != nil {
		return b, err
	}
	c.srv.Stats.Ops[opOpen].Add(1)
	st, err := n.Stat()
	if err != nil {
		return b, err
	}
	if err := allowed(st, r.mode&^plan9.ORCLOSE); err != nil {
		return b, err
	}
	var h tree.Handle
	var dir []plan9.Dir
	if d, ok := n.(tree.Dir); ok {
		if dir, err = d.List(); err != nil {
			return b, err
		}
		if dir == nil {
			dir = []plan9.Dir{}
		}
	} else if file, ok := n.(tree.File); !ok {
		return b, errs.E(errs.Permission, st.Name+" cannot be opened")
	} else if h, err = file.Open(ctx, r.mode); err != nil {
		return b, err
	}
	f.mu.Lock()
	if f.omode != -1 { // opened meanwhile, by a concurrent Topen
		f.mu.Unlock()
		if h != nil {
			h.Close()
		}
		return b, errDuplicateOpen
	}
	f.omode, f.qid, f.h, f.dir = int(r.mode), st.Qid, h, dir // the version may have moved since the walk
	f.rclose = r.mode&plan9.ORCLOSE != 0
	f.mu.Unlock()
	return rqid(b, plan9.Ropen, r.tag, st.Qid), nil
}

func (c *conn) create(ctx context.Context, r *request, f *fid, b []byte) ([]byte, error) {
	f.mu.Lock()
	omode, qid, path := f.omode, f.qid, f.path
	f.mu.Unlock()
	switch {
	case omode != -1:
		return b, errDuplicateOpen
	case qid.Type&plan9.QTDIR == 0:
		return b, errCreateNonDir
	}
	c.srv.Stats.Ops[opCreate].Add(1)
	if err := c.guard(f, path, tree.OpCreate); err != nil {
		return b, err
	}
	cr, ok := path[len(path)-1].(tree.Creator)
	if !ok {
		return b, errs.E(errs.Permission, "cannot create "+quote(r.name)+" here")
	}
	n, h, err := cr.Create(ctx, r.name, r.perm, r.mode)
	if err != nil {
		return b, err
	}
	st, err := n.Stat()
	if err == nil {
		f.mu.Lock()
		if f.omode != -1 {
			err = errDuplicateOpen
		} else {
			f.path = append(path[:len(path):len(path)], n)
			f.omode, f.qid, f.h = int(r.mode), st.Qid, h
			f.rclose = r.mode&plan9.ORCLOSE != 0
			f.dir = nil
			if h == nil {
				f.dir = []plan9.Dir{} // a new directory is empty
			}
		}
		f.mu.Unlock()
	}
	if err != nil {
		if h != nil {
			h.Close()
		}
		return b, err
	}
	return rqid(b, plan9.Rcreate, r.tag, st.Qid), nil
}
