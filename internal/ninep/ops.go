package ninep

import (
	"context"
	"io"

	"9fans.net/go/plan9"
	"9fans.net/go/plan9/srv9p"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

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

func (s *Server) open(ctx context.Context, fid *srv9p.Fid, mode uint8) error {
	s.Stats.Ops[opOpen].Add(1)
	fs := state(fid)
	n := fs.node()
	st, err := n.Stat()
	if err != nil {
		return err
	}
	if err := allowed(st, mode&^plan9.ORCLOSE); err != nil {
		return err
	}
	fid.SetQid(st.Qid) // the version may have moved since the walk
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.rclose = mode&plan9.ORCLOSE != 0
	if d, ok := n.(tree.Dir); ok {
		ents, err := d.List()
		if err != nil {
			return err
		}
		fs.dir = ents
		return nil
	}
	f, ok := n.(tree.File)
	if !ok {
		return errs.E(errs.Permission, st.Name+" cannot be opened")
	}
	h, err := f.Open(ctx, mode)
	if err != nil {
		return err
	}
	fs.h = h
	return nil
}

func (s *Server) create(ctx context.Context, fid *srv9p.Fid, name string, perm plan9.Perm, mode uint8) (plan9.Qid, error) {
	s.Stats.Ops[opCreate].Add(1)
	fs := state(fid)
	c, ok := fs.node().(tree.Creator)
	if !ok {
		return plan9.Qid{}, errs.E(errs.Permission, "cannot create "+quote(name)+" here")
	}
	n, h, err := c.Create(ctx, name, perm, mode)
	if err != nil {
		return plan9.Qid{}, err
	}
	st, err := n.Stat()
	if err != nil {
		if h != nil {
			h.Close()
		}
		return plan9.Qid{}, err
	}
	nfs := &fidState{path: append(fs.path[:len(fs.path):len(fs.path)], n), h: h}
	nfs.rclose = mode&plan9.ORCLOSE != 0
	if h == nil {
		nfs.dir = []plan9.Dir{}
	}
	fid.SetAux(nfs)
	return st.Qid, nil
}

func (s *Server) read(ctx context.Context, fid *srv9p.Fid, data []byte, off int64) (int, error) {
	s.Stats.Ops[opRead].Add(1)
	fs := state(fid)
	fs.mu.Lock()
	h, dir := fs.h, fs.dir
	fs.mu.Unlock()
	if h == nil {
		return fid.ReadDir(data, off, func(i int, d *plan9.Dir) bool {
			if i >= len(dir) {
				return false
			}
			*d = dir[i]
			return true
		})
	}
	n, err := h.ReadAt(ctx, data, off)
	if err == io.EOF {
		err = nil // the end of a file is an empty read in 9P, not an error
	}
	s.Stats.BytesRead.Add(uint64(n))
	if err != nil && ctx.Err() != nil && !errs.Is(err, errs.Interrupted) {
		err = errs.E(errs.Interrupted)
	}
	return n, err
}

func (s *Server) write(ctx context.Context, fid *srv9p.Fid, data []byte, off int64) (int, error) {
	s.Stats.Ops[opWrite].Add(1)
	fs := state(fid)
	fs.mu.Lock()
	h := fs.h
	fs.mu.Unlock()
	if h == nil {
		return 0, errs.E(errs.IsDir)
	}
	n, err := h.WriteAt(ctx, data, off)
	s.Stats.BytesWritten.Add(uint64(n))
	return n, err
}

func (s *Server) stat(ctx context.Context, fid *srv9p.Fid) (*plan9.Dir, error) {
	s.Stats.Ops[opStat].Add(1)
	fs := state(fid)
	st, err := fs.node().Stat()
	if err != nil {
		return nil, err
	}
	if len(fs.path) == 1 {
		st.Name = "/"
	}
	return &st, nil
}

// truncater is a handle that serves a wstat of length itself, so a
// truncate through an open file (what FUSE sends for O_TRUNC) reaches it.
type truncater interface{ Truncate(size int64) error }

func (s *Server) wstat(ctx context.Context, fid *srv9p.Fid, d *plan9.Dir) error {
	s.Stats.Ops[opWstat].Add(1)
	fs := state(fid)
	fs.mu.Lock()
	h := fs.h
	fs.mu.Unlock()
	if t, ok := h.(truncater); ok && d.Length != ^uint64(0) {
		if err := t.Truncate(int64(d.Length)); err != nil {
			return err
		}
		d.Length = ^uint64(0)
		if d.IsNull() {
			return nil
		}
	}
	w, ok := fs.node().(tree.Wstater)
	if !ok {
		return errs.E(errs.Permission, "cannot change this file's metadata")
	}
	return w.Wstat(ctx, d)
}

func (s *Server) remove(ctx context.Context, fid *srv9p.Fid) error {
	s.Stats.Ops[opRemove].Add(1)
	fs := state(fid)
	if len(fs.path) == 1 {
		return errs.E(errs.Permission, "cannot remove the root")
	}
	r, ok := fs.node().(tree.Remover)
	if !ok {
		return errs.E(errs.Permission, "cannot remove this file")
	}
	fs.mu.Lock()
	h := fs.h
	fs.h, fs.rclose = nil, false
	fs.mu.Unlock()
	if h != nil {
		h.Close()
	}
	return r.Remove(ctx)
}

func (s *Server) clunk(fid *srv9p.Fid) {
	s.Stats.Ops[opClunk].Add(1)
	fs := state(fid)
	if fs == nil {
		return
	}
	fs.mu.Lock()
	h, rclose := fs.h, fs.rclose
	fs.h = nil
	fs.mu.Unlock()
	if h != nil {
		h.Close()
	}
	if rclose {
		if r, ok := fs.node().(tree.Remover); ok {
			r.Remove(context.Background())
		}
	}
}

// syncer is a handle that can report, on a null wstat (the 9P fsync), an
// error it would otherwise only discover at clunk, when no one can hear it.
type syncer interface{ Sync() error }

func (s *Server) sync(ctx context.Context, fid *srv9p.Fid) error {
	s.Stats.Ops[opWstat].Add(1)
	fs := state(fid)
	fs.mu.Lock()
	h := fs.h
	fs.mu.Unlock()
	if sy, ok := h.(syncer); ok {
		return sy.Sync()
	}
	return nil
}
