package daemon

import (
	"net"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/tree"
	"ollie.dev/ollie/internal/who"
)

// peer says who is at the other end of c, from the kernel: the process
// that connected a unix socket (SO_PEERCRED) is resolved against the
// stages the executor registered, so a stage that reaches the socket is
// served as itself whatever it claims. A connection whose peer cannot be
// known is served as a stage of no session. TCP connections are the
// user's once authenticated (there is no other kind).
func peer(c net.Conn) *tree.Principal {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return &tree.Principal{}
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil || cred.Pid <= 0 {
		return &tree.Principal{}
	}
	return who.Stages.Resolve(int(cred.Pid))
}
