package ninep

import (
	"context"
	"errors"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// What a wstat may not change (stat(5)).
var (
	errWstatType  = errors.New("wstat cannot change type")
	errWstatDev   = errors.New("wstat cannot change dev")
	errWstatQid   = errors.New("wstat cannot change qid")
	errWstatMuid  = errors.New("wstat cannot change muid")
	errWstatDMDIR = errors.New("wstat cannot change DMDIR bit")
)

// wstat serves Twstat. One that changes nothing is a sync (tree.Syncer);
// a length goes to the open handle if it truncates (tree.Truncater).
func (c *conn) wstat(ctx context.Context, r *request, f *fid) error {
	d, err := plan9.UnmarshalDir(r.data)
	if err != nil {
		return err
	}
	f.mu.Lock()
	h, qid, path := f.h, f.qid, f.path
	f.mu.Unlock()
	n := path[len(path)-1]
	if err := c.guardWstat(f, path, d); err != nil {
		return err
	}
	switch {
	case d.IsNull():
		c.srv.Stats.Ops[opWstat].Add(1)
		if sy, ok := h.(tree.Syncer); ok {
			return sy.Sync()
		}
		return nil
	case ^d.Type != 0:
		return errWstatType
	case ^d.Dev != 0:
		return errWstatDev
	case ^d.Qid.Type != 0 || ^d.Qid.Vers != 0 || ^d.Qid.Path != 0:
		return errWstatQid
	case d.Muid != "":
		return errWstatMuid
	case ^d.Mode != 0 && (d.Mode&plan9.DMDIR != 0) != (qid.Type&plan9.QTDIR != 0):
		return errWstatDMDIR
	}
	c.srv.Stats.Ops[opWstat].Add(1)
	if t, ok := h.(tree.Truncater); ok && d.Length != ^uint64(0) {
		if err := t.Truncate(int64(d.Length)); err != nil {
			return err
		}
		d.Length = ^uint64(0)
		if d.IsNull() {
			return nil
		}
	}
	w, ok := n.(tree.Wstater)
	if !ok {
		return errs.E(errs.Permission, "cannot change this file's metadata")
	}
	return w.Wstat(ctx, d)
}
