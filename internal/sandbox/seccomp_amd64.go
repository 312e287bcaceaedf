package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's system calls, which would otherwise
	// reach socket under another number.
	x32Bit = 0x40000000
)
