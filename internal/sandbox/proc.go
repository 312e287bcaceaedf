package sandbox

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// A Proc is a started program: a child of the process that called
// Start, and the leader of its own process group, whose id is Pid.
type Proc struct {
	Pid  int
	wait func() (syscall.WaitStatus, error)
}

// Wait reaps the program and returns its wait status. It also waits for
// the copying of a Stdin that is not a file to end.
func (p *Proc) Wait() (syscall.WaitStatus, error) { return p.wait() }

// stdin is a program's standard input as a file it can inherit: the
// Stdin itself if it is a file, /dev/null for none, or the read end of a
// pipe that a goroutine fills from the reader, as os/exec does. The
// copying only starts once the program does, so that the reader is
// untouched if it is started some other way.
type stdin struct {
	f      *os.File // what the program gets
	owned  bool     // f is ours to close once sent
	w      *os.File // the pipe's write end, for a reader
	r      io.Reader
	copied chan struct{}
}

func openStdin(r io.Reader) (*stdin, error) {
	switch r := r.(type) {
	case nil:
		f, err := os.Open(os.DevNull)
		return &stdin{f: f, owned: true}, err
	case *os.File:
		return &stdin{f: r}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &stdin{f: pr, owned: true, w: pw, r: r}, nil
}

// sent closes our copy of the program's end once the helper has its own.
func (s *stdin) sent() {
	if s.owned {
		s.f.Close()
	}
}

// start begins the copying.
func (s *stdin) start() {
	if s.w == nil {
		return
	}
	s.copied = make(chan struct{})
	go func() {
		defer close(s.copied)
		io.Copy(s.w, s.r) // EPIPE when the program stops reading: nothing to report
		s.w.Close()
	}()
}

// abort gives up without copying.
func (s *stdin) abort() {
	if s.w != nil {
		s.w.Close()
	}
}

// wait waits for the copying to end: the reader is exhausted, or every
// reader of the pipe has closed it.
func (s *stdin) wait() {
	if s.copied != nil {
		<-s.copied
	}
}

// reap waits for child pid to exit and returns its status.
func reap(pid int) (syscall.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err != unix.EINTR {
			return syscall.WaitStatus(ws), err
		}
	}
}
