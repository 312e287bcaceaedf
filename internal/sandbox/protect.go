package sandbox

// Protected metadata: paths inside a stage's writable roots that run code
// later, outside any sandbox, and so must stay read-only to the stage.
// A .git directory is the example: a planted hooks/post-commit or a
// core.pager in config runs at the user's next `git commit`.
//
// Landlock cannot carve a read-only subtree out of a writable one (rights
// inherit downwards, and creating or removing entries in the root covers
// .git itself), so protection is a mount: the stage runs in a mount
// namespace of its own in which each protected path is bound onto itself
// read-only. Writes beneath it fail with EROFS; renaming or removing it
// fails with EBUSY (it is a mount point); a hard link into or out of it
// fails with EXDEV. The namespace is made by the helper, which has
// CAP_SYS_ADMIN there (root, or the user namespace the helper was
// started in), before the stage's seccomp filter and capability drop.
// Where neither exists the stage is refused rather than run with its
// metadata writable.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// protectedPaths lists what must stay read-only inside the writable
// roots rw: each root's .git (a directory, or a pointer file together
// with its gitdir and that gitdir's common directory), and every private
// path inside a root. Paths outside every writable root are left out:
// Landlock already keeps them read-only. reopen are the writable roots
// that lie inside a protected path (a session's tmp inside ollie's data
// directory when a profile writes all of ~/.local/share), to be bound
// writable again.
func protectedPaths(rw, private []string) (ro, reopen []string) {
	inRW := func(p string) bool {
		return slices.ContainsFunc(rw, func(r string) bool { return within(p, r) })
	}
	var out []string
	for _, r := range rw {
		for _, p := range gitPaths(r) {
			if p = resolve(p); inRW(p) {
				out = append(out, p)
			}
		}
	}
	for _, p := range private { // already resolved
		if !inRW(p) {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	for _, r := range rw {
		if slices.ContainsFunc(out, func(p string) bool { return p != r && within(r, p) }) {
			reopen = append(reopen, r)
		}
	}
	return out, reopen
}

// gitPaths returns root/.git and, when it is a pointer file (a worktree
// or submodule), the directories it points at: git runs the hooks and
// reads the config of the common directory.
func gitPaths(root string) []string {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return []string{dotgit}
	}
	out := []string{dotgit}
	gitdir := pointer(dotgit, "gitdir: ")
	if gitdir == "" {
		return out
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(root, gitdir)
	}
	if fi, err := os.Stat(gitdir); err != nil || !fi.IsDir() {
		return out
	}
	out = append(out, gitdir)
	if common := pointer(filepath.Join(gitdir, "commondir"), ""); common != "" {
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		if fi, err := os.Stat(common); err == nil && fi.IsDir() {
			out = append(out, filepath.Clean(common))
		}
	}
	return out
}

// pointer returns the first line of file if it starts with prefix,
// without the prefix; "" otherwise.
func pointer(file, prefix string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), prefix) {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(sc.Text(), prefix))
}

// privateMounts gives the calling thread a mount namespace of its own
// in which the host's later mounts still appear but its own stay its
// own. The thread must be locked and never handed back: the namespace is
// the thread's, and whatever it forks inherits it.
func privateMounts() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("mount namespace: %v", err)
	}
	return retryEINTR(func() error { return unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, "") })
}

// bindOnto binds each of paths onto itself in the calling thread's mount
// namespace (see privateMounts), read-only or writable.
func bindOnto(paths []string, readOnly bool) error {
	for _, p := range paths {
		err := retryEINTR(func() error { return unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, "") })
		var st unix.Statfs_t
		if err == nil {
			err = retryEINTR(func() error { return unix.Statfs(p, &st) })
		}
		if err == nil {
			// A bind remount sets the flags it is given: keep the ones
			// the mount had (a user namespace may not clear them).
			flags := uintptr(st.Flags)&keptFlags | unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV
			if readOnly {
				flags |= unix.MS_RDONLY
			}
			err = retryEINTR(func() error { return unix.Mount("", p, "", flags, "") })
		}
		if err != nil {
			return fmt.Errorf("binding %s: %v", p, err)
		}
	}
	return nil
}

// keptFlags are the mount flags a read-only bind keeps from its mount;
// statfs reports them with the values mount takes.
const keptFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME

// protect makes paths read-only, but reopen writable again, for whatever
// the calling thread starts from now on; nothing for none.
func protect(paths, reopen []string) error {
	if len(paths) == 0 {
		return nil
	}
	if err := privateMounts(); err != nil {
		return noProtection(err)
	}
	if err := bindOnto(paths, true); err != nil {
		return err
	}
	return bindOnto(reopen, false)
}

// noProtection is the error of a helper that cannot make a namespace.
func noProtection(err error) error {
	return fmt.Errorf("cannot keep .git and ollie's directories read-only (%v): "+
		"the helper needs CAP_SYS_ADMIN (a daemon running as root) or unprivileged user namespaces; "+
		`or set "protect_metadata": false in the profile`, err)
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// userNamespaceHelper reports whether helpers should be started in a user
// namespace of their own, which gives them CAP_SYS_ADMIN over the mount
// namespaces they make: only a daemon that is not root needs one.
func userNamespaceHelper() bool { return os.Geteuid() != 0 && runtime.GOOS == "linux" }

// inUserNamespace makes a helper start in a user namespace of its own in
// which it keeps its uid and gid and holds CAP_SYS_ADMIN (ambient, so
// that it survives the exec): enough to make mount namespaces, nothing
// outside them. Programs it starts drop the capabilities (dropCaps).
func inUserNamespace(a *syscall.SysProcAttr) {
	uid, gid := os.Getuid(), os.Getgid()
	a.Cloneflags |= syscall.CLONE_NEWUSER
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = append(a.AmbientCaps, unix.CAP_SYS_ADMIN, unix.CAP_SYS_CHROOT) // chroot: for setns
}
