//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// denied are the calls every stage is refused with EPERM, whatever its
// arguments. Most are already useless without capabilities; the filter
// refuses them anyway because a kernel bug behind a capability check is
// one check away, while a refused call never reaches the code at all.
var denied = append([]denial{
	{unix.SYS_SETSID, "setsid", "would leave the stage's process group, which is how a stage is killed"},
	{unix.SYS_SETPGID, "setpgid", "the same (the gate's own setpgid is let through before this)"},
	{unix.SYS_KEYCTL, "keyctl", "the user's keyrings hold credentials"},
	{unix.SYS_ADD_KEY, "add_key", "keyrings"},
	{unix.SYS_REQUEST_KEY, "request_key", "keyrings"},
	{unix.SYS_IO_URING_SETUP, "io_uring_setup", "io_uring makes sockets and opens files past the filter"},
	{unix.SYS_IO_URING_ENTER, "io_uring_enter", "io_uring"},
	{unix.SYS_IO_URING_REGISTER, "io_uring_register", "io_uring"},
	{unix.SYS_UNSHARE, "unshare", "new namespaces: a user namespace gives back every capability inside it"},
	{unix.SYS_SETNS, "setns", "joining namespaces"},
	{unix.SYS_BPF, "bpf", "kernel attack surface; unprivileged BPF is rarely off"},
	{unix.SYS_PERF_EVENT_OPEN, "perf_event_open", "kernel attack surface and side channels"},
	{unix.SYS_USERFAULTFD, "userfaultfd", "stalls the kernel at will inside copies: the classic exploit aid"},
	{unix.SYS_MOUNT, "mount", "mounts (useful only in a new namespace, which is refused too)"},
	{unix.SYS_UMOUNT2, "umount2", "mounts"},
	{unix.SYS_PIVOT_ROOT, "pivot_root", "mounts"},
	{unix.SYS_MOVE_MOUNT, "move_mount", "mounts"},
	{unix.SYS_FSOPEN, "fsopen", "mounts"},
	{unix.SYS_FSCONFIG, "fsconfig", "mounts"},
	{unix.SYS_FSMOUNT, "fsmount", "mounts"},
	{unix.SYS_FSPICK, "fspick", "mounts"},
	{unix.SYS_OPEN_TREE, "open_tree", "mounts"},
	{unix.SYS_OPEN_TREE_ATTR, "open_tree_attr", "mounts"},
	{unix.SYS_MOUNT_SETATTR, "mount_setattr", "mounts"},
	{unix.SYS_SWAPON, "swapon", "system administration"},
	{unix.SYS_SWAPOFF, "swapoff", "system administration"},
	{unix.SYS_REBOOT, "reboot", "system administration"},
	{unix.SYS_KEXEC_LOAD, "kexec_load", "loads a kernel"},
	{unix.SYS_KEXEC_FILE_LOAD, "kexec_file_load", "loads a kernel"},
	{unix.SYS_INIT_MODULE, "init_module", "kernel modules"},
	{unix.SYS_FINIT_MODULE, "finit_module", "kernel modules"},
	{unix.SYS_DELETE_MODULE, "delete_module", "kernel modules"},
	{unix.SYS_OPEN_BY_HANDLE_AT, "open_by_handle_at", "opens a file by inode, past every path rule"},
	{unix.SYS_NAME_TO_HANDLE_AT, "name_to_handle_at", "the other half of open_by_handle_at"},
	{unix.SYS_LOOKUP_DCOOKIE, "lookup_dcookie", "kernel profiling"},
	{unix.SYS_ACCT, "acct", "system administration"},
	{unix.SYS_QUOTACTL, "quotactl", "system administration"},
	{unix.SYS_QUOTACTL_FD, "quotactl_fd", "system administration"},
	{unix.SYS_SETTIMEOFDAY, "settimeofday", "the clock is the system's"},
	{unix.SYS_CLOCK_SETTIME, "clock_settime", "the clock"},
	{unix.SYS_CLOCK_ADJTIME, "clock_adjtime", "the clock"},
	{unix.SYS_ADJTIMEX, "adjtimex", "the clock"},
	{unix.SYS_VHANGUP, "vhangup", "hangs up the terminal"},
	{unix.SYS_SYSLOG, "syslog", "the kernel log shows addresses and other processes"},
	{unix.SYS_PROCESS_VM_READV, "process_vm_readv", "another process's memory"},
	{unix.SYS_PROCESS_VM_WRITEV, "process_vm_writev", "another process's memory"},
	{unix.SYS_KCMP, "kcmp", "compares other processes' kernel objects"},
	{unix.SYS_FANOTIFY_INIT, "fanotify_init", "watches the whole file system"},
	{unix.SYS_NFSSERVCTL, "nfsservctl", "system administration"},
	{unix.SYS_CHROOT, "chroot", "system administration"},
}, archDenied...)

// personalities are the personality(2) arguments a stage may pass, as in
// Docker's profile: the default, the 32-bit compatibility flags, and the
// query. Others turn off address randomisation or make data executable.
var personalities = []uint32{0, 0x8, 0x20000, 0x20008, 0xffffffff}

// cloneNamespaces are clone's flags that create namespaces. CLONE_NEWTIME
// is left out: in clone's flags its bit is part of the exit signal, and
// it exists only for clone3 (refused) and unshare (refused).
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
