package fusebridge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/mountinfo"
	"ollie.dev/ollie/internal/ninep/client"
)

// Server is a mounted 9P tree.
type Server struct {
	dir  string
	fuse *fuse.Server
	b    *bridge

	once     sync.Once
	done     chan struct{} // closed when the kernel has let go of the mount, or Unmount stopped waiting
	doneOnce sync.Once
	mu       sync.Mutex
	err      error // why the mount ended, if not by Unmount
}

// Mount dials the 9P server with dial, attaches, and mounts the tree on
// dir. dial is called again whenever the connection is lost (unless
// opts.NoReconnect). The mount point must be an empty directory that is
// not already a mount point; a dead FUSE mount left there by a crashed
// bridge is detached first.
func Mount(ctx context.Context, dir string, dial func(ctx context.Context) (*client.Conn, error), opts Options) (*Server, error) {
	opts.fill()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := checkMountPoint(dir, opts.Logf); err != nil {
		return nil, err
	}
	b := &bridge{opts: opts, dial: dial, closed: make(chan struct{}), fatal: make(chan error, 1)}
	s, err := b.connect(ctx)
	if err != nil {
		return nil, err
	}
	rootDir, err := s.root.Stat(ctx)
	if err != nil {
		s.conn.Close()
		return nil, err
	}
	root := &node{b: b, fid: s.root, sess: s}
	fopts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:      "ollie",
			Name:        "ollie",
			DirectMount: true, // root needs no fusermount
			MaxWrite:    128 * 1024,
			// 9P has no extended attributes; ENOSYS makes the kernel stop
			// asking, and cp -p treats it as "not supported".
			DisableXAttrs: true,
			AllowOther:    opts.AllowOther,
			Debug:         opts.Debug,
			// O_TRUNC arrives in open and becomes OTRUNC, instead of a
			// separate truncate that synthetic files would refuse.
			ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_DIRECT_IO_ALLOW_MMAP,
		},
		EntryTimeout:    timeout(opts.EntryTimeout),
		AttrTimeout:     timeout(opts.AttrTimeout),
		NegativeTimeout: timeout(0),
		RootStableAttr:  &fs.StableAttr{Ino: qidIno(rootDir.Qid), Mode: syscall.S_IFDIR},
	}
	fsrv, err := fs.Mount(dir, root, fopts)
	if err != nil {
		s.conn.Close()
		return nil, errs.E(errs.Unavailable, "mount "+dir, err)
	}
	srv := &Server{dir: dir, fuse: fsrv, b: b, done: make(chan struct{})}
	go func() {
		fsrv.Wait()
		srv.finish()
	}()
	go func() {
		select {
		case err := <-b.fatal:
			srv.mu.Lock()
			srv.err = errs.E(errs.Unavailable, "lost the 9P connection", err)
			srv.mu.Unlock()
			srv.Unmount()
		case <-b.closed:
		}
	}()
	return srv, nil
}

// Dir returns the mount point.
func (s *Server) Dir() string { return s.dir }

// Unmount unmounts the tree and closes the 9P connection. If the mount is
// busy (a shell's working directory is in it) it is detached lazily, so the
// caller never hangs.
//
// The kernel keeps a FUSE mount's connection, and go-fuse its serving
// loops, while a copy of the mount is left in another mount namespace (a
// process that unshared its mounts while this one was there): Unmount
// waits for that at most releaseWait, then says so in the log and
// returns, the mount being gone from this namespace. The copies fail
// with ENOTCONN once this process exits.
func (s *Server) Unmount() error {
	var err error
	s.once.Do(func() {
		close(s.b.closed)
		unmounted := make(chan error, 1)
		go func() { unmounted <- s.fuse.Unmount() }()
		select {
		case err = <-unmounted:
		case <-time.After(releaseWait):
			s.b.opts.Logf("ollie mount: %s is unmounted, but copies of it in other mount namespaces hold its connection; not waiting for them", s.dir)
			s.finish()
		}
		if err != nil {
			if derr := syscall.Unmount(s.dir, syscall.MNT_DETACH); derr == nil {
				err = nil
			}
		}
		if cur := s.b.cur.Load(); cur != nil {
			cur.conn.Close()
		}
	})
	return err
}

// releaseWait bounds Unmount's wait for the kernel to let go of the
// mount: it lets go at once unless a copy of the mount is held elsewhere.
var releaseWait = 5 * time.Second

// finish marks the mount ended for Wait.
func (s *Server) finish() { s.doneOnce.Do(func() { close(s.done) }) }

// Wait waits until the tree is unmounted. It returns nil after Unmount, or
// the error that ended the mount.
func (s *Server) Wait() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// checkMountPoint gives a clear error for the usual mistakes instead of
// the kernel's bare errno.
func checkMountPoint(dir string, logf func(string, ...any)) error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return errs.E(errs.Unavailable, "FUSE unavailable: no /dev/fuse (load the fuse module, or use the ollie CLI verbs)")
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, syscall.ENOTCONN) {
		// A bridge died without unmounting: clear its corpse.
		logf("ollie mount: detaching dead mount on %s", dir)
		syscall.Unmount(dir, syscall.MNT_DETACH)
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return errs.E(errs.KindOf(err), "mount point", err)
	}
	if !fi.IsDir() {
		return errs.E(errs.NotDir, "mount point "+dir)
	}
	if IsMountPoint(dir) {
		return errs.E(errs.Busy, "mount point "+dir+" is already mounted")
	}
	f, err := os.Open(dir)
	if err != nil {
		return errs.E(errs.KindOf(err), "mount point", err)
	}
	defer f.Close()
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return errs.E(errs.Busy, "mount point "+dir+" is not empty")
	}
	return nil
}

// IsMountPoint reports whether dir is listed in /proc/self/mountinfo.
func IsMountPoint(dir string) bool { return mountinfo.IsMountPoint(dir) }

// SetDebug turns FUSE request logging on or off.
func (s *Server) SetDebug(on bool) { s.fuse.SetDebug(on) }
