package client

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// IOFS presents the tree behind fsys as an io/fs.FS, so the standard
// library's tools (fs.WalkDir, fstest.TestFS, text/template.ParseFS) can
// read it. Every call uses ctx.
func IOFS(ctx context.Context, fsys *Fsys) fs.FS { return &iofs{ctx: ctx, fsys: fsys} }

type iofs struct {
	ctx  context.Context
	fsys *Fsys
}

func (f *iofs) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	fid, err := f.fsys.Open(f.ctx, name, plan9.OREAD)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ioErr(err)}
	}
	d, err := fid.Stat(f.ctx)
	if err != nil {
		fid.Clunk(f.ctx)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: ioErr(err)}
	}
	if name == "." {
		d.Name = "."
	}
	return &iofile{ctx: f.ctx, fid: fid, dir: d, name: name}, nil
}

func ioErr(err error) error {
	switch errs.KindOf(err) {
	case errs.NotExist:
		return fs.ErrNotExist
	case errs.Permission:
		return fs.ErrPermission
	case errs.Exist:
		return fs.ErrExist
	}
	return err
}

type iofile struct {
	ctx  context.Context
	fid  *Fid
	dir  *plan9.Dir
	name string
	off  int64
	ents []*plan9.Dir // directory entries not yet returned
	read bool         // the directory has been read
}

func (f *iofile) Stat() (fs.FileInfo, error) { return info{f.dir}, nil }

func (f *iofile) Read(p []byte) (int, error) {
	if f.dir.Mode&plan9.DMDIR != 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: errors.New("is a directory")}
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := f.fid.Read(f.ctx, p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *iofile) Close() error { return f.fid.Clunk(f.ctx) }

// ReadDir implements fs.ReadDirFile.
func (f *iofile) ReadDir(n int) ([]fs.DirEntry, error) {
	if f.dir.Mode&plan9.DMDIR == 0 {
		return nil, &fs.PathError{Op: "readdir", Path: f.name, Err: errors.New("not a directory")}
	}
	if !f.read {
		ds, err := f.fid.DirreadAll(f.ctx)
		if err != nil {
			return nil, err
		}
		f.ents, f.read = ds, true
	}
	k := len(f.ents)
	if n > 0 && n < k {
		k = n
	}
	if n > 0 && k == 0 {
		return nil, io.EOF
	}
	out := make([]fs.DirEntry, k)
	for i, d := range f.ents[:k] {
		out[i] = fs.FileInfoToDirEntry(info{d})
	}
	f.ents = f.ents[k:]
	return out, nil
}

// info is a plan9.Dir as an fs.FileInfo.
type info struct{ d *plan9.Dir }

func (i info) Name() string       { return path.Base(i.d.Name) }
func (i info) Size() int64        { return int64(i.d.Length) }
func (i info) ModTime() time.Time { return time.Unix(int64(i.d.Mtime), 0) }
func (i info) IsDir() bool        { return i.d.Mode&plan9.DMDIR != 0 }
func (i info) Sys() any           { return i.d }
func (i info) Mode() fs.FileMode {
	m := fs.FileMode(i.d.Mode & 0777)
	if i.IsDir() {
		m |= fs.ModeDir
	}
	return m
}
