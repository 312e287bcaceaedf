package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's system calls, which would otherwise
	// reach socket under another number.
	x32Bit = 0x40000000
)

// archDenied are the refused calls only this architecture has.
var archDenied = []denial{
	{unix.SYS_IOPL, "iopl", "raw I/O ports"},
	{unix.SYS_IOPERM, "ioperm", "raw I/O ports"},
	{unix.SYS_CREATE_MODULE, "create_module", "kernel modules (obsolete)"},
	{unix.SYS_QUERY_MODULE, "query_module", "kernel modules (obsolete)"},
	{unix.SYS_GET_KERNEL_SYMS, "get_kernel_syms", "kernel modules (obsolete)"},
	{unix.SYS_SYSFS, "sysfs", "obsolete"},
	{unix.SYS__SYSCTL, "_sysctl", "obsolete"},
	{unix.SYS_USELIB, "uselib", "obsolete"},
	{unix.SYS_USTAT, "ustat", "obsolete"},
}
