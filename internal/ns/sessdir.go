package ns

import (
	"context"
	"os"
	"strconv"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
)

// sessionDir is s/<id>/. Its files come from sessionTable; their qids are
// a block allocated once per session, so they are stable across walks.
type sessionDir struct {
	parent *sessionsDir
	s      *session.Session
	base   uint64 // qid of the directory; file i of the table is base+1+i
	name   string // as walked: the id or the name
}

func (d *sessionDir) Stat() (plan9.Dir, error) {
	if d.s.Removed() {
		return plan9.Dir{}, errs.E(errs.NotExist, "session ended")
	}
	st := dirStat(d.parent.fs, d.base, d.name, 0755)
	st.Mtime = activity(d.s)
	st.Atime = st.Mtime
	return st, nil
}

// activity is when the session last changed: its chat's mtime, else its
// creation. It is the mtime of the directory and of chat, so that
// ls -lt s/ and s/cleanup can tell idle sessions by age.
func activity(s *session.Session) uint32 {
	if fi, err := os.Stat(s.ChatPath()); err == nil {
		return uint32(fi.ModTime().Unix())
	}
	return uint32(s.Summary().Meta.Created.Unix()) // a stat must not wait for the session's lock
}

// askPath is the qid of a session's ask/ directory: the last of its block.
func (d *sessionDir) askPath() uint64 { return d.base + 1 + uint64(len(sessionTable)) }

func (d *sessionDir) Walk(name string) (tree.Node, error) {
	if name == "ask" {
		return &askDir{d: d, path: d.askPath()}, nil
	}
	for i := range sessionTable {
		if sessionTable[i].name == name {
			return &sessFile{d: d, spec: &sessionTable[i], path: d.base + 1 + uint64(i)}, nil
		}
	}
	return nil, errs.E(errs.NotExist, name)
}

func (d *sessionDir) List() ([]plan9.Dir, error) {
	out := make([]plan9.Dir, 0, len(sessionTable)+1)
	for i := range sessionTable {
		st, _ := (&sessFile{d: d, spec: &sessionTable[i], path: d.base + 1 + uint64(i)}).Stat()
		out = append(out, st)
	}
	st, _ := (&askDir{d: d, path: d.askPath()}).Stat()
	return append(out, st), nil
}

// Remove ends the session (rmdir, or the last step of rm -r).
func (d *sessionDir) Remove(ctx context.Context) error {
	if err := d.parent.hooks.M.Remove(d.s.ID()); err != nil {
		return err
	}
	d.parent.forget(d.s.ID())
	return nil
}

// Wstat with a new name renames the session (mv s/a s/b).
func (d *sessionDir) Wstat(ctx context.Context, st *plan9.Dir) error {
	if st.Name == "" || st.Name == d.name {
		return nil
	}
	return d.parent.hooks.M.Rename(d.s.ID(), st.Name)
}

// fileSpec is one row of the session table.
type fileSpec struct {
	name string
	perm plan9.Perm
	mode string // for help
	doc  string
	// open makes the handle, in a goroutine of the 9P server: it may take
	// the session's lock. The handle's reads are served in the server's
	// reader only if it is one of tree's (tree.Immediate), such as a
	// Snapshot rendered here.
	open func(d *sessionDir, mode uint8) (tree.Handle, error)
	// openCtx, instead of open, is an open that waits for something
	// outside the daemon (the network): it gets the open's context,
	// which a Tflush (Ctrl-C of the reader) cancels.
	openCtx func(ctx context.Context, d *sessionDir, mode uint8) (tree.Handle, error)
	// stat, if set, fills in length and version.
	stat func(s *session.Session, st *plan9.Dir)
	// view, if set, renders for stat what a read would return now, for
	// its length (NAMESPACE rule 9). It runs in the 9P reader, so it
	// takes the session's values without waiting (session.Peek...); false
	// means the lock was taken, and stat shows the length it found last.
	view func(d *sessionDir) ([]byte, bool)
	// size, instead of view, is the length alone (reply: a view would
	// copy a reply of any size for each stat).
	size func(d *sessionDir) (int, bool)
	// disk: a file the session keeps on disk and a client may cache by
	// its version (plan), or append-only (chat, events). Every other file
	// is made at open or changes behind a client's back (context), and
	// its stat says so (tree.Synthesized): no cache may cut its reads.
	disk bool
}

// sessFile is one file of a session directory.
type sessFile struct {
	d    *sessionDir
	spec *fileSpec
	path uint64
}

func (f *sessFile) Stat() (plan9.Dir, error) {
	fs := f.d.parent.fs
	st := plan9.Dir{Qid: plan9.Qid{Path: f.path, Type: uint8(f.spec.perm >> 24)}, Mode: f.spec.perm, Name: f.spec.name,
		Uid: fs.Uid, Gid: fs.Uid, Muid: fs.Uid, Mtime: fs.Mtime, Atime: fs.Mtime}
	if !f.spec.disk {
		st.Mode |= tree.Synthesized
	}
	switch {
	case f.spec.size != nil:
		n, ok := f.spec.size(f.d)
		st.Length = f.d.parent.viewLength(f.path, n, ok)
	case f.spec.view != nil:
		b, ok := f.spec.view(f.d)
		st.Length = f.d.parent.viewLength(f.path, len(b), ok)
	}
	if f.spec.stat != nil {
		f.spec.stat(f.d.s, &st)
	}
	return st, nil
}

func (f *sessFile) Open(ctx context.Context, mode uint8) (tree.Handle, error) {
	if f.d.s.Removed() {
		return nil, errs.E(errs.NotExist, "session ended")
	}
	if f.spec.openCtx != nil {
		return f.spec.openCtx(ctx, f.d, mode)
	}
	return f.spec.open(f.d, mode)
}

// Remove of a file in a session does nothing: rm -r s/<id> removes the
// files before the directory, and removing the directory ends the session.
func (f *sessFile) Remove(ctx context.Context) error { return nil }

func text(b []byte) (tree.Handle, error) { return &tree.Snapshot{Data: b}, nil }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
