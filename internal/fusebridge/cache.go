package fusebridge

import (
	"context"
	"syscall"

	"9fans.net/go/plan9"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/ninep/client"
)

// cacheFlags decides, at open, how the kernel may cache the file whose
// current qid is q. Synthetic and append-only files get direct I/O, so
// every read(2) is a Tread: they have no meaningful size, change behind
// the kernel's back, or block. A plain file keeps its page cache only if
// its Qid.Vers is the one the cache was filled at (close-to-open
// consistency, as in NFS); if the attributes the kernel holds are older
// than q, they are invalidated so the next read sees the new size.
func (n *node) cacheFlags(q plan9.Qid) uint32 {
	n.mu.Lock()
	plain := n.plain && q.Type&plan9.QTAPPEND == 0
	keep := n.pageOK && n.pageVers == q.Vers
	staleAttr := n.attrVers != q.Vers
	n.pageOK, n.pageVers = plain, q.Vers
	n.mu.Unlock()
	switch {
	case !plain:
		return fuse.FOPEN_DIRECT_IO
	case keep:
		return fuse.FOPEN_KEEP_CACHE
	}
	if staleAttr {
		n.NotifyContent(-1, 0) // attributes only; pages go with !KEEP_CACHE
	}
	return 0
}

// openCached opens a plain file for reading with a Tstat instead of a
// Topen: the qid tells whether the kernel's cached pages are current
// (close-to-open consistency needs no more), and a cat of a cached file
// then costs one round trip and no fid. The handle opens the file at its
// first read, which comes only if the pages were not current. A file that
// is not plain, not readable, or an open for writing takes a Topen.
func (n *node) openCached(ctx context.Context, flags uint32) (*handle, uint32, bool) {
	if flags&(syscall.O_ACCMODE|syscall.O_TRUNC) != syscall.O_RDONLY {
		return nil, 0, false
	}
	if _, stage := stageCaller(ctx); stage {
		return nil, 0, false // its open must reach the daemon's stage table
	}
	n.mu.Lock()
	plain := n.plain
	n.mu.Unlock()
	if !plain {
		return nil, 0, false
	}
	var d *plan9.Dir
	err := n.withOwnFid(ctx, func(f *client.Fid, _ *session) (err error) {
		d, err = f.Stat(ctx)
		return err
	})
	if err != nil || !n.b.plain(d) || d.Mode&0400 == 0 {
		return nil, 0, false // let the Topen say what is wrong
	}
	return &handle{n: n, mode: plan9.OREAD, paged: true}, n.cacheFlags(d.Qid), true
}

// readPaged fills p from off with as many Treads as the message size
// needs (the kernel may ask for more than one carries), stopping at the
// first short one: a server returns less than asked of a plain file only
// at its end, so another Tread just to meet the end would be wasted.
func readPaged(ctx context.Context, f *client.Fid, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		want := min(len(p)-n, int(f.Iounit()))
		m, err := f.Read(ctx, p[n:n+want], off+int64(n))
		n += m
		if err != nil || m < want {
			return n, err
		}
	}
	return n, nil
}
