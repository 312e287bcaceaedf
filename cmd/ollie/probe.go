package main

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"9fans.net/go/plan9"
	"ollie.dev/ollie/internal/fusebridge"
)

// probe checks that a 9P server answers Tversion on the unix socket.
func probe(socket string) error {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	tx := &plan9.Fcall{Type: plan9.Tversion, Tag: plan9.NOTAG, Msize: 8192, Version: "9P2000"}
	if err := plan9.WriteFcall(c, tx); err != nil {
		return err
	}
	rx, err := plan9.ReadFcall(c)
	if err != nil {
		return err
	}
	if rx.Type != plan9.Rversion {
		return errors.New("not a 9P server")
	}
	return nil
}

// cleanDeadMount lazily unmounts dir if it is a mount whose server died
// (stat fails with ENOTCONN), so a restart can mount there again.
func cleanDeadMount(dir string) bool {
	_, err := os.Stat(dir)
	if errors.Is(err, syscall.ENOTCONN) || (err != nil && fusebridge.IsMountPoint(dir)) {
		return syscall.Unmount(dir, syscall.MNT_DETACH) == nil
	}
	return false
}

// prepareMountPoint makes dir, clearing a dead mount left by a daemon
// that was killed. A live mount there is an error.
func prepareMountPoint(dir string) error {
	cleanDeadMount(dir)
	if fusebridge.IsMountPoint(dir) {
		return errors.New(dir + " is already a mount point; unmount it or choose another with -mount")
	}
	return os.MkdirAll(dir, 0700)
}
