// Package fusebridge puts a 9P file tree into the Linux VFS through FUSE.
//
// Every FUSE request becomes 9P requests at once: a write is a Twrite whose
// error comes back on that write, a read is a Tread, and an interrupted
// request (Ctrl-C) becomes a Tflush, because the FUSE request's context is
// the 9P call's context. Nothing is buffered in the bridge.
//
//	srv, err := fusebridge.Mount(ctx, "/mnt/ollie", dial, fusebridge.Options{})
//	...
//	srv.Unmount()
//	err = srv.Wait()
//
// Caching: synthesized files (DMTMP in mode, or length 0 in stat) and append-only
// files (QTAPPEND) are opened with FOPEN_DIRECT_IO and their attributes are
// not cached, because they change behind the kernel's back or block. Plain
// files may be cached for CacheTimeout and keep their page cache across
// opens while their Qid.Vers is unchanged. See docs/mount.md.
//
// Each node remembers nothing but its place in the tree (go-fuse keeps the
// path) and, lazily, a 9P fid walked to it. When the connection dies the
// bridge dials again on the next request; fids from the old connection are
// stale and each node and open file re-walks its path on first use.
package fusebridge

import (
	"context"
	"errors"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// Options configure a mount. The zero value is usable.
type Options struct {
	Uname string // 9P user name in Tattach; default "none"
	Aname string // 9P tree name in Tattach; default ""

	// EntryTimeout is how long the kernel may cache a name lookup.
	// Default 1s; negative means 0.
	EntryTimeout time.Duration
	// AttrTimeout is how long the kernel may cache attributes (size,
	// mtime). Default 0, so tail -f sees growth and ls never shows a stale
	// size; negative also means 0.
	AttrTimeout time.Duration

	// CacheTimeout is how long the kernel may cache the attributes of a
	// plain file: one with a length, not append-only, not a directory.
	// Plain files also use the page cache, revalidated at each open by
	// Qid.Vers. Synthesized (DMTMP or length 0) and append-only files
	// are never cached. Default 1s; negative disables caching (direct I/O for all).
	CacheTimeout time.Duration

	// NoReconnect makes a lost 9P connection unmount the file system
	// (Wait then returns the error) instead of dialling again.
	NoReconnect bool

	// Logf receives errors the daemon sent, with their full text, and
	// connection events. Default log.Printf.
	Logf func(format string, args ...any)

	// Debug logs every FUSE request.
	Debug bool
	// AllowOther lets users other than the mounter use the mount.
	AllowOther bool
}

func (o *Options) fill() {
	if o.Uname == "" {
		o.Uname = "none"
	}
	if o.EntryTimeout == 0 {
		o.EntryTimeout = time.Second
	}
	if o.CacheTimeout == 0 {
		o.CacheTimeout = time.Second
	}
	o.EntryTimeout = max(o.EntryTimeout, 0)
	o.AttrTimeout = max(o.AttrTimeout, 0)
	if o.Logf == nil {
		o.Logf = log.Printf
	}
}

// A session is one live 9P connection and its root fid. Nodes and open
// files record the session their fid belongs to; a different current
// session means the fid is stale.
type session struct {
	conn *client.Conn
	root *client.Fid
	// via is set for the fids of a caller the bridge does not vouch for
	// (caller.go): the connection's session they ride on.
	via *session
}

func (s *session) dead() bool {
	select {
	case <-s.conn.Done():
		return true
	default:
		return false
	}
}

// bridge is the state shared by all nodes of one mount.
type bridge struct {
	opts Options
	dial func(ctx context.Context) (*client.Conn, error)

	cur    atomic.Pointer[session]
	dialMu sync.Mutex // one dial at a time

	closed   chan struct{} // closed by Unmount; stops reconnecting
	fatal    chan error    // the connection died and NoReconnect is set
	fatalErr sync.Once
}

// redialTimeout bounds a dial made on behalf of a FUSE request, so a
// request never hangs on an unreachable daemon.
const redialTimeout = 5 * time.Second

// session returns the live session, dialling again if the connection died.
func (b *bridge) session(ctx context.Context) (*session, error) {
	if s := b.cur.Load(); s != nil && !s.dead() {
		return s, nil
	}
	if b.opts.NoReconnect {
		return nil, errs.E(errs.Unavailable, client.ErrHungup)
	}
	ctx, cancel := context.WithTimeout(ctx, redialTimeout)
	defer cancel()
	return b.connect(ctx)
}

// connect dials and attaches, unless another request already did.
func (b *bridge) connect(ctx context.Context) (*session, error) {
	b.dialMu.Lock()
	defer b.dialMu.Unlock()
	old := b.cur.Load()
	if old != nil && !old.dead() {
		return old, nil
	}
	conn, err := b.dial(ctx)
	if err != nil {
		return nil, errs.E(errs.Unavailable, err)
	}
	root, err := conn.Attach(ctx, b.opts.Uname, b.opts.Aname)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &session{conn: conn, root: root}
	b.cur.Store(s)
	if old != nil {
		b.opts.Logf("ollie mount: reconnected to the 9P server")
	}
	go b.watch(s)
	return s, nil
}

// watch reports the death of s's connection and, unless told otherwise,
// reconnects in the background so the mount is ready before the next
// request.
func (b *bridge) watch(s *session) {
	select {
	case <-b.closed:
		return
	case <-s.conn.Done():
	}
	err := s.conn.Err()
	if b.opts.NoReconnect {
		b.opts.Logf("ollie mount: lost the 9P connection: %v; unmounting", err)
		b.fatalErr.Do(func() { b.fatal <- err })
		return
	}
	b.opts.Logf("ollie mount: lost the 9P connection: %v; reconnecting", err)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		select {
		case <-b.closed:
			return
		case <-time.After(delay):
		}
		if b.cur.Load() != s {
			return // a request reconnected first
		}
		ctx, cancel := context.WithTimeout(context.Background(), redialTimeout)
		_, err := b.connect(ctx)
		cancel()
		if err == nil {
			return
		}
	}
}

// qidIno maps a 9P qid to an inode number. Qid paths are stable integers
// (NAMESPACE.md rule 6), so inode numbers survive reconnects; the +1 keeps
// a server's qid path 0 off inode 0, which FUSE reserves.
func qidIno(q plan9.Qid) uint64 { return q.Path + 1 }

// twice runs op, and once more if it failed because the connection died
// under it: a daemon restart the mount had not noticed yet. Only
// idempotent requests (walk, stat, open, directory reads) go through it;
// the second try walks afresh on the new connection.
func twice[T any](op func() (T, error)) (T, error) {
	v, err := op()
	if err != nil && errors.Is(err, client.ErrHungup) {
		return op()
	}
	return v, err
}
