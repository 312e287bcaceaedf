package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The floors: what an operation could not cost less than on this
// machine, measured in the same run as the operation.

// ForkExec returns an operation that runs /bin/true and waits for it: the
// floor of anything that starts a process (an execute_code stage).
func ForkExec() func() error {
	return func() error { return exec.Command("/bin/true").Run() }
}

// WriteFsync returns an operation that creates a small file in dir,
// writes it, fsyncs and closes it, and removes it: the floor of anything
// durable (a session's creation; a prompt's write).
func WriteFsync(dir string) func() error {
	path := filepath.Join(dir, "fsync-floor")
	data := []byte(strings.Repeat("x", 64))
	return func() error {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0600)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
}

// MkdirCreate returns an operation that makes a directory in dir and a
// small file in it, then removes both: the floor of anything that lays
// out a directory on disk (a session's creation: its directory and its
// meta file).
func MkdirCreate(dir string) func() error {
	d := filepath.Join(dir, "mkdir-floor")
	f := filepath.Join(d, "meta")
	data := []byte(strings.Repeat("x", 64))
	return func() error {
		if err := os.Mkdir(d, 0700); err != nil {
			return err
		}
		err := os.WriteFile(f, data, 0600)
		os.Remove(f)
		if rerr := os.Remove(d); err == nil {
			err = rerr
		}
		return err
	}
}

// CatFile returns an operation that runs `cat src > dst` (dst on disk,
// overwritten): the floor of a stream of bytes arriving and landing in a
// file, as a streamed reply does in chat.
func CatFile(src, dst string) func() error {
	return func() error {
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		defer out.Close()
		cmd := exec.Command("cat", src)
		cmd.Stdout = out
		return cmd.Run()
	}
}

// elapsed times one run of op.
func elapsed(op func() error) (time.Duration, error) {
	start := time.Now()
	err := op()
	return time.Since(start), err
}
