package ns

import (
	"context"
	"strconv"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// askDir is s/<id>/ask/: one file per pending consent request (an
// elevated execute_code stage). Reading a file shows the request; writing
// allow or deny answers it, and the file goes away.
type askDir struct {
	d    *sessionDir
	path uint64
}

func (a *askDir) Stat() (plan9.Dir, error) {
	return dirStat(a.d.parent.fs, a.path, "ask", 0755), nil
}

func (a *askDir) Walk(name string) (tree.Node, error) {
	id, err := strconv.Atoi(name)
	if err != nil {
		return nil, errs.E(errs.NotExist, name)
	}
	if _, ok := a.d.s.AskText(id); !ok {
		return nil, errs.E(errs.NotExist, "no pending request "+name)
	}
	return &askFile{a: a, id: id}, nil
}

func (a *askDir) List() ([]plan9.Dir, error) {
	var out []plan9.Dir
	for _, id := range a.d.s.Asks() {
		st, _ := (&askFile{a: a, id: id}).Stat()
		out = append(out, st)
	}
	return out, nil
}

// askFile is one pending request.
type askFile struct {
	a  *askDir
	id int
}

func (f *askFile) Stat() (plan9.Dir, error) {
	fs := f.a.d.parent.fs
	// Qids of requests are the directory's path plus the request number
	// in the high bits, so they never collide with allocated ones.
	return plan9.Dir{Qid: plan9.Qid{Path: f.a.path | uint64(f.id)<<48}, Mode: 0666, Name: strconv.Itoa(f.id),
		Uid: fs.Uid, Gid: fs.Uid, Muid: fs.Uid, Mtime: fs.Mtime, Atime: fs.Mtime}, nil
}

func (f *askFile) Open(ctx context.Context, mode uint8) (tree.Handle, error) {
	text, ok := f.a.d.s.AskText(f.id)
	if !ok {
		return nil, errs.E(errs.NotExist, "the request was answered or withdrawn")
	}
	return &rwText{render: func() []byte { return []byte(text) }, write: func(b []byte) error {
		return f.a.d.s.Answer(f.id, string(b))
	}}, nil
}

// Remove of an answered request's file is a no-op (rm -r of a session).
func (f *askFile) Remove(ctx context.Context) error { return nil }

// Remove of ask/ does nothing: rm -r s/<id> removes it before the session.
func (a *askDir) Remove(ctx context.Context) error { return nil }
