package bench

import (
	"io"
	"os"
	"path/filepath"
	"syscall"

	"ollie.dev/ollie/internal/errs"
)

// OpenReadClose returns an operation that opens the file at path, reads
// it to the end and closes it: what cat does.
func OpenReadClose(path string) func() error {
	buf := make([]byte, 64*1024)
	return func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			_, err := f.Read(buf)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// Stat returns an operation that stats the file at path.
func Stat(path string) func() error {
	var st syscall.Stat_t
	return func() error {
		if err := syscall.Stat(path, &st); err != nil {
			return &os.PathError{Op: "stat", Path: path, Err: err}
		}
		return nil
	}
}

// tmpfsMagic is the f_type statfs reports for tmpfs.
const tmpfsMagic = 0x01021994

// Tmpfs returns a directory on tmpfs for files to compare with: a new one
// in /dev/shm if that is tmpfs, else a tmpfs mounted on a new directory
// in dir (which needs root). The returned function removes it.
func Tmpfs(dir string) (string, func(), error) {
	var fs syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &fs) == nil && fs.Type == tmpfsMagic {
		d, err := os.MkdirTemp("/dev/shm", "ollie-bench")
		if err != nil {
			return "", nil, err
		}
		return d, func() { os.RemoveAll(d) }, nil
	}
	d := filepath.Join(dir, "tmpfs")
	if err := os.Mkdir(d, 0700); err != nil {
		return "", nil, err
	}
	if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size=16m"); err != nil {
		return "", nil, errs.E(errs.Unavailable, "no tmpfs: /dev/shm is not one, and mount", err)
	}
	return d, func() { syscall.Unmount(d, syscall.MNT_DETACH) }, nil
}
