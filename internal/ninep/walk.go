package ninep

import (
	"encoding/binary"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// walk serves Twalk. The new path is committed only when the walk is
// complete, so a partial or failed walk leaves fid as it was even when
// newfid is fid, and makes no newfid.
func (c *conn) walk(r *request, b []byte) ([]byte, error) {
	f := c.fids[r.fid]
	if f == nil {
		return b, errUnknownFid
	}
	f.mu.Lock()
	omode, fqid := f.omode, f.qid
	path := append(make([]tree.Node, 0, len(f.path)+len(r.wname)), f.path...)
	f.mu.Unlock()
	switch {
	case omode != -1:
		return b, errCloneOpenFid
	case len(r.wname) > 0 && fqid.Type&plan9.QTDIR == 0:
		return b, errWalkNonDir
	case r.newfid != r.fid && c.fids[r.newfid] != nil:
		return b, errDuplicateFid
	}
	c.srv.Stats.Ops[opWalk].Add(1)
	start := len(b)
	b = put16(putHdr(b, plan9.Rwalk, r.tag), 0)
	nq := 0
	qid := fqid
	var err error
	for _, name := range r.wname {
		var st plan9.Dir
		if path, st, err = step(path, name); err != nil {
			break
		}
		qid = st.Qid
		b = putQid(b, qid)
		nq++
	}
	if nq < len(r.wname) {
		if r.newfid != r.fid {
			c.srv.Stats.Ops[opClunk].Add(1) // the newfid made and dropped, as srv9p counted
		}
		if nq == 0 {
			return b[:start], err
		}
		// A partial walk is no error: fewer qids say where it stopped.
	} else if r.newfid == r.fid {
		f.mu.Lock()
		f.path, f.qid = path, qid
		f.mu.Unlock()
	} else {
		c.fids[r.newfid] = newFid(f.uname, f.who, path, qid)
	}
	binary.LittleEndian.PutUint16(b[start+hdrSize:], uint16(nq))
	return finish(b, start), nil
}

// step walks one name from the last node of path and returns the new path
// and the stat of its last node.
func step(path []tree.Node, name string) ([]tree.Node, plan9.Dir, error) {
	cur := path[len(path)-1]
	d, ok := cur.(tree.Dir)
	if !ok {
		return path, plan9.Dir{}, errs.E(errs.NotDir, name)
	}
	var next tree.Node
	var st plan9.Dir
	var err error
	switch name {
	case "..":
		if len(path) > 1 {
			path = path[:len(path)-1]
		}
		st, err = path[len(path)-1].Stat()
		return path, st, err
	case ".", "":
		return path, st, errs.E(errs.NotExist, "bad path element "+quote(name))
	}
	if sw, ok := d.(tree.StatWalker); ok {
		// A disk directory stats the name to walk it: one stat, not two.
		next, st, err = sw.WalkStat(name)
	} else if next, err = d.Walk(name); err == nil {
		st, err = next.Stat()
	}
	if err != nil {
		return path, st, err
	}
	return append(path, next), st, nil
}

func quote(s string) string { return "\"" + s + "\"" }
