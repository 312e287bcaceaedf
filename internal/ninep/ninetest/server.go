package ninetest

import (
	"context"
	"strings"

	"9fans.net/go/plan9"
	"9fans.net/go/plan9/srv9p"

	"ollie.dev/ollie/internal/errs"
)

// Msize is the largest message the test server accepts.
const Msize = 128*1024 + plan9.IOHDRSZ

// fidState is what the server keeps per fid.
type fidState struct {
	n    *node
	dirs []plan9.Dir // directory snapshot taken at open
}

func state(fid *srv9p.Fid) *fidState { return fid.Aux().(*fidState) }

// Server returns a srv9p server for one connection to t.
func (t *Tree) Server() *srv9p.Server {
	return &srv9p.Server{
		Msize: Msize,
		Attach: func(ctx context.Context, fid, afid *srv9p.Fid, user, aname string) (plan9.Qid, error) {
			fid.SetAux(&fidState{n: t.root})
			return t.root.dir.Qid, nil
		},
		Walk:   t.walk,
		Open:   t.open,
		Create: t.create,
		Read:   t.read,
		Write:  t.write,
		Stat: func(ctx context.Context, fid *srv9p.Fid) (*plan9.Dir, error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			d := state(fid).n.stat()
			return &d, nil
		},
		Wstat:  t.wstat,
		Remove: t.remove,
	}
}

func (t *Tree) walk(ctx context.Context, fid, newfid *srv9p.Fid, names []string) ([]plan9.Qid, error) {
	clone := func(old, new *srv9p.Fid) error {
		new.SetAux(&fidState{n: state(old).n})
		return nil
	}
	return srv9p.Walk(fid, newfid, names, clone, func(f *srv9p.Fid, name string) (plan9.Qid, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		st := state(f)
		next := st.n.parent
		if name != ".." {
			next = st.n.children[name]
		}
		if next == nil {
			return plan9.Qid{}, errs.E(errs.NotExist)
		}
		st.n = next
		return next.dir.Qid, nil
	})
}

func (t *Tree) open(ctx context.Context, fid *srv9p.Fid, mode uint8) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := state(fid)
	n := st.n
	want := plan9.Perm(0)
	switch mode & 3 {
	case plan9.OREAD:
		want = 0400
	case plan9.OWRITE:
		want = 0200
	case plan9.ORDWR:
		want = 0600
	}
	if mode&plan9.OTRUNC != 0 {
		want |= 0200
	}
	if n.dir.Mode&want != want {
		return errs.E(errs.Permission)
	}
	if n.isDir() {
		st.dirs = n.sortedChildren()
	}
	if mode&plan9.OTRUNC != 0 && n.kind == plain && len(n.data) > 0 {
		n.data = nil
		n.touch()
	}
	fid.SetQid(n.dir.Qid)
	return nil
}

func (t *Tree) create(ctx context.Context, fid *srv9p.Fid, name string, perm plan9.Perm, mode uint8) (plan9.Qid, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := state(fid)
	if name == "." || name == ".." || strings.Contains(name, "/") {
		return plan9.Qid{}, errs.E(errs.Invalid, "bad file name")
	}
	if st.n.children[name] != nil {
		return plan9.Qid{}, errs.E(errs.Exist)
	}
	st.n = t.add(st.n, name, perm, plain)
	if st.n.isDir() {
		st.dirs = nil
	}
	return st.n.dir.Qid, nil
}

func (t *Tree) read(ctx context.Context, fid *srv9p.Fid, data []byte, off int64) (int, error) {
	t.mu.Lock()
	st := state(fid)
	n := st.n
	switch {
	case n.isDir():
		t.mu.Unlock()
		return fid.ReadDir(data, off, func(i int, d *plan9.Dir) bool {
			if i >= len(st.dirs) {
				return false
			}
			*d = st.dirs[i]
			return true
		})
	case n.kind == blocking:
		unblock := t.unblock
		t.mu.Unlock()
		if off > 0 {
			return 0, nil
		}
		select {
		case t.blocked <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return 0, errs.E(errs.Interrupted)
		case <-unblock:
			return copy(data, "unblocked\n"), nil
		}
	}
	defer t.mu.Unlock()
	return fid.ReadBytes(data, off, n.data)
}

func (t *Tree) write(ctx context.Context, fid *srv9p.Fid, data []byte, off int64) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := state(fid).n
	switch n.kind {
	case control:
		cmd := strings.TrimSpace(string(data))
		if !strings.HasPrefix(cmd, "ok") {
			return 0, errs.E(errs.Invalid, "unknown command "+cmd)
		}
		t.Ctl = append(t.Ctl, cmd)
		return len(data), nil
	case growing:
		off = int64(len(n.data))
	case blocking:
		return 0, errs.E(errs.Permission)
	}
	if end := off + int64(len(data)); end > int64(len(n.data)) {
		n.data = append(n.data, make([]byte, end-int64(len(n.data)))...)
	}
	copy(n.data[off:], data)
	n.touch()
	return len(data), nil
}

func (t *Tree) wstat(ctx context.Context, fid *srv9p.Fid, d *plan9.Dir) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := state(fid).n
	if d.Name != "" && d.Name != n.dir.Name {
		if n == t.root || strings.Contains(d.Name, "/") {
			return errs.E(errs.Invalid, "bad file name")
		}
		if n.parent.children[d.Name] != nil {
			return errs.E(errs.Exist)
		}
		delete(n.parent.children, n.dir.Name)
		n.dir.Name = d.Name
		n.parent.children[d.Name] = n
		n.parent.touch()
	}
	if d.Length != ^uint64(0) {
		if n.kind != plain || n.isDir() {
			return errs.E(errs.Permission, "cannot change length")
		}
		if int(d.Length) <= len(n.data) {
			n.data = n.data[:d.Length]
		} else {
			n.data = append(n.data, make([]byte, int(d.Length)-len(n.data))...)
		}
		n.touch()
	}
	if d.Mode != ^plan9.Perm(0) {
		n.dir.Mode = n.dir.Mode&^0777 | d.Mode&0777
	}
	if d.Mtime != ^uint32(0) {
		n.dir.Mtime = d.Mtime
	}
	return nil
}

func (t *Tree) remove(ctx context.Context, fid *srv9p.Fid) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := state(fid).n
	switch {
	case n == t.root:
		return errs.E(errs.Permission)
	case len(n.children) > 0:
		return errs.E(errs.NotEmpty)
	case n.parent.children[n.dir.Name] != n:
		return errs.E(errs.NotExist)
	}
	delete(n.parent.children, n.dir.Name)
	n.parent.touch()
	return nil
}
