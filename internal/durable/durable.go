// Package durable replaces files whole and makes changes to files and
// directories survive a crash (NAMESPACE.md rule 4: durable before
// acknowledged). The session store and the installer of the shipped
// defaults use it.
package durable

import (
	"os"
	"strconv"
	"sync/atomic"
)

// Replace replaces name with data by the rename of a temporary file
// beside it, so that a reader, or a crash of the process, sees the old
// content or the new, never a mix. perm is the file's mode whatever the
// umask. With sync, data is on disk before the rename; the rename itself
// is durable once the directory is synced (Sync), which Replace leaves to
// the caller, who may have several to sync at once.
func Replace(name string, data []byte, perm os.FileMode, sync bool) error {
	tmp := name + ".tmp" + strconv.FormatUint(seq.Add(1), 10)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// seq tells apart the temporary files of concurrent Replaces of a name.
var seq atomic.Uint64

// Sync makes the file or directory at path durable: a file's data, a
// directory's entries (files made, renamed or removed in it).
func Sync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
