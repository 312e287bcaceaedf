package client

import (
	"context"
	"encoding/binary"
	"io"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// Stat returns the directory entry of the file.
func (f *Fid) Stat(ctx context.Context) (*plan9.Dir, error) {
	c := f.c
	cl, err := c.get(plan9.Tstat)
	if err != nil {
		return nil, err
	}
	defer c.put(cl)
	cl.put32(f.num)
	if err := c.rpc(ctx, cl, nil); err != nil {
		return nil, err
	}
	d, err := plan9.UnmarshalDir(cl.stat)
	if err != nil {
		return nil, protocolError("bad stat in Rstat")
	}
	return d, nil
}

// Wstat changes the file's metadata. Fields of d that are "don't touch"
// (~0, "", see plan9.Dir.Null) are left alone; a wholly null d asks the
// server to commit the file to stable storage.
func (f *Fid) Wstat(ctx context.Context, d *plan9.Dir) error {
	stat, err := d.Bytes()
	if err != nil {
		return err
	}
	c := f.c
	cl, err := c.get(plan9.Twstat)
	if err != nil {
		return err
	}
	defer c.put(cl)
	cl.put32(f.num)
	cl.put16(uint16(len(stat)))
	return c.rpc(ctx, cl, stat)
}

// Sync asks the server to commit the file to stable storage (a Twstat that
// changes nothing).
func (f *Fid) Sync(ctx context.Context) error {
	var d plan9.Dir
	d.Null()
	return f.Wstat(ctx, &d)
}

// Clunk forgets the fid. It is never flushed, because a fid whose Tclunk
// was flushed would be in limbo; ctx is accepted for symmetry only.
func (f *Fid) Clunk(ctx context.Context) error {
	return f.end(plan9.Tclunk, context.Background())
}

// Remove removes the file and forgets the fid, even if the removal fails.
func (f *Fid) Remove(ctx context.Context) error {
	err := f.end(plan9.Tremove, ctx)
	if errs.Is(err, errs.Interrupted) && !f.c.isDead() {
		// A flushed Tremove did not happen, so the fid lives on.
		f.end(plan9.Tclunk, context.Background())
	}
	return err
}

func (f *Fid) end(ttype uint8, ctx context.Context) error {
	c := f.c
	cl, err := c.get(ttype)
	if err != nil {
		return err
	}
	defer c.put(cl)
	cl.put32(f.num)
	err = c.rpc(ctx, cl, nil)
	if err == nil || !errs.Is(err, errs.Interrupted) {
		c.freeFid(f.num)
	}
	return err
}

func (c *Conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// Dirread reads the next batch of directory entries from the open
// directory f; it returns io.EOF after the last. Dirread calls on one fid
// must not run concurrently.
func (f *Fid) Dirread(ctx context.Context) ([]*plan9.Dir, error) {
	buf := make([]byte, f.Iounit())
	n, err := f.Read(ctx, buf, f.diroff)
	if err != nil {
		return nil, err
	}
	f.diroff += int64(n)
	return UnmarshalDirs(buf[:n])
}

// DirreadAll reads the remaining entries of the open directory f.
func (f *Fid) DirreadAll(ctx context.Context) ([]*plan9.Dir, error) {
	var all []*plan9.Dir
	for {
		ds, err := f.Dirread(ctx)
		all = append(all, ds...)
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return all, err
		}
	}
}

// UnmarshalDirs decodes the concatenated stat entries of a directory read.
func UnmarshalDirs(b []byte) ([]*plan9.Dir, error) {
	var ds []*plan9.Dir
	for len(b) > 0 {
		if len(b) < 2 {
			return ds, protocolError("short stat in directory read")
		}
		n := int(binary.LittleEndian.Uint16(b)) + 2
		if n > len(b) {
			return ds, protocolError("short stat in directory read")
		}
		d, err := plan9.UnmarshalDir(b[:n])
		if err != nil {
			return ds, protocolError("bad stat in directory read")
		}
		ds = append(ds, d)
		b = b[n:]
	}
	return ds, nil
}
