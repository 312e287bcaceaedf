package tree

import (
	"context"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// Synthesized marks, in a stat's mode (DMTMP: not backed up), a file
// whose content is made when it is opened rather than stored, or that
// the server changes behind its clients' backs (a session's context). Its length is that of a read at the moment of the stat, but the
// next open may read another: clients must not cache its content or trust
// its length to bound a read (the FUSE bridge opens it with direct I/O).
const Synthesized = plan9.DMTMP

// Synth is a synthetic file: its content is made by the handler given at
// construction, not stored. The typed constructors below cover the usual
// shapes (snapshot text, ctl, read-write); anything else supplies Opener.
// One with a Length carries Synthesized in its stat.
type Synth struct {
	fs   *FS
	name string
	perm plan9.Perm
	path uint64
	Vers Version // bump when the content changes
	// Length reports the size for stat: what a read at that moment would
	// return in all (NAMESPACE rule 9). It must be cheap, at once (see
	// atonce.go) and free of side effects. Text sets it; a file without
	// one (a clone file, one that blocks or asks the network) reports 0.
	Length func() int64
	open   Opener
}

// Opener opens a synthetic file.
type Opener func(ctx context.Context, mode uint8) (Handle, error)

// NewSynth builds a synthetic file with a fresh qid.
func (fs *FS) NewSynth(name string, perm plan9.Perm, open Opener) *Synth {
	return &Synth{fs: fs, name: name, perm: perm, path: fs.Qids.Next(), open: open}
}

// Text is a read-only file whose content is rendered at open and served
// from that snapshot, so a read in several pieces sees one version. A
// stat renders it too, for its length, so render must be cheap and at
// once: no lock another request may hold, no network, no fsync.
func (fs *FS) Text(name string, render func() ([]byte, error)) *Synth {
	s := fs.NewSynth(name, 0444, func(ctx context.Context, mode uint8) (Handle, error) {
		b, err := render()
		if err != nil {
			return nil, err
		}
		return &Snapshot{Data: b}, nil
	})
	s.Length = func() int64 {
		b, err := render()
		if err != nil {
			return 0
		}
		return int64(len(b))
	}
	return s
}

// Ctl is a write-only file: each write is one command, applied before the
// write returns, and its error is the write's error.
func (fs *FS) Ctl(name string, do func(ctx context.Context, cmd []byte) error) *Synth {
	s := fs.NewSynth(name, 0222, func(ctx context.Context, mode uint8) (Handle, error) {
		return ctlHandle(do), nil
	})
	return s
}

// RW is a read-write file: reads serve a snapshot taken at open; each
// write is applied at once by do.
func (fs *FS) RW(name string, render func() ([]byte, error), do func(ctx context.Context, data []byte) error) *Synth {
	s := fs.NewSynth(name, 0666, func(ctx context.Context, mode uint8) (Handle, error) {
		h := &rwHandle{do: do}
		if mode&3 != plan9.OWRITE {
			b, err := render()
			if err != nil {
				return nil, err
			}
			h.Data = b
		}
		return h, nil
	})
	return s
}

func (s *Synth) Stat() (plan9.Dir, error) {
	d := plan9.Dir{
		Qid:   qid(s.path, s.Vers.Load(), s.perm),
		Mode:  s.perm,
		Name:  s.name,
		Uid:   s.fs.Uid,
		Gid:   s.fs.Uid,
		Muid:  s.fs.Uid,
		Atime: s.fs.Mtime,
		Mtime: s.fs.Mtime,
	}
	if s.Length != nil {
		d.Length = uint64(s.Length())
		d.Mode |= Synthesized
	}
	return d, nil
}

func (s *Synth) Open(ctx context.Context, mode uint8) (Handle, error) { return s.open(ctx, mode) }

// Snapshot is a read-only handle over fixed bytes.
type Snapshot struct{ Data []byte }

func (s *Snapshot) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(s.Data)) {
		return 0, nil
	}
	return copy(p, s.Data[off:]), nil
}

func (s *Snapshot) WriteAt(context.Context, []byte, int64) (int, error) {
	return 0, errs.E(errs.Permission, "file is read-only")
}

func (s *Snapshot) Close() error { return nil }

type ctlHandle func(ctx context.Context, cmd []byte) error

func (h ctlHandle) ReadAt(context.Context, []byte, int64) (int, error) {
	return 0, errs.E(errs.Permission, "file is write-only")
}

func (h ctlHandle) WriteAt(ctx context.Context, p []byte, _ int64) (int, error) {
	if err := h(ctx, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h ctlHandle) Close() error { return nil }

type rwHandle struct {
	Snapshot
	do func(ctx context.Context, data []byte) error
}

func (h *rwHandle) WriteAt(ctx context.Context, p []byte, _ int64) (int, error) {
	if err := h.do(ctx, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
