package defaults_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ollie.dev/ollie/internal/testutil"
)

// lines is n numbered lines of about width bytes each.
func lines(n, width int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		s := fmt.Sprintf("line %d ", i)
		b.WriteString(s + strings.Repeat("x", max(width-len(s)-1, 0)) + "\n")
	}
	return b.String()
}

// noTemps fails when a temporary file of the tools is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// file_edit and file_write replace a file whole or not at all: with the
// file size limit (RLIMIT_FSIZE, as a quota does) below the new size, the
// original is untouched and the error says so.
func TestAtomicWriteFileTooLarge(t *testing.T) {
	f := newFiles(t)
	orig := lines(1000, 40) // 40 KB
	f.write("big.txt", orig)
	tdir := filepath.Join(f.cfg.ConfigDir, "t")
	limited := func(tool string, args ...string) call {
		// ulimit -f counts KiB in bash: 64 KiB, below the 80 KB of the result.
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		return f.run("", code("bash", "ulimit -f 64\n"+tdir+"/"+tool+" "+strings.Join(q, " ")))
	}
	fails(t, limited("file_edit", "big.txt", "line 500 "+strings.Repeat("x", 30), strings.Repeat("y", 40<<10)),
		"big.txt: File too large; the file is unchanged")
	if f.read("big.txt") != orig {
		t.Fatalf("a failed edit changed the file")
	}
	fails(t, limited("file_write", "big.txt", strings.Repeat("z", 100<<10)), "the file is unchanged")
	if f.read("big.txt") != orig {
		t.Fatalf("a failed write changed the file")
	}
	fails(t, limited("file_write", "big.txt", strings.Repeat("z", 30<<10), "--append"), "the file is unchanged")
	if f.read("big.txt") != orig {
		t.Fatalf("a failed append changed the file")
	}
	fails(t, limited("file_write", "new.txt", strings.Repeat("z", 100<<10)), "nothing was written")
	if _, err := os.Stat(filepath.Join(f.cwd, "new.txt")); err == nil {
		t.Errorf("a failed write left new.txt")
	}
	noTemps(t, f.cwd)
}

// A file of another owner, writable to the session, is replaced only if
// its owner can be kept; else it is left as it was, and the error says why.
func TestAtomicWriteOtherOwner(t *testing.T) {
	testutil.RequireRoot(t, "giving a file to another owner")
	f := newFiles(t)
	p := f.write("theirs.txt", "a = 1\n")
	if err := os.Chmod(p, 0666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	c := f.run("", tool("file_edit", "theirs.txt", "a = 1", "a = 2"))
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if c.Failed() {
		fails(t, c, "cannot keep its owner 4321:4321; the file is unchanged")
		t.Log("the sandbox may not chown: the edit was refused")
		if f.read("theirs.txt") != "a = 1\n" || sys.Uid != 4321 {
			t.Errorf("a refused edit changed the file")
		}
		return
	}
	if f.read("theirs.txt") != "a = 2\n" || sys.Uid != 4321 || sys.Gid != 4321 {
		t.Errorf("edited, but owner %d:%d", sys.Uid, sys.Gid)
	}
}

// On a full file system (a 64 KiB tmpfs mounted by the test, which needs
// root; the file size limit above needs nothing) the original is kept.
func TestAtomicWriteDiskFull(t *testing.T) {
	testutil.RequireRoot(t, "mounting a small tmpfs; TestAtomicWriteFileTooLarge covers the same without it")
	f := newFiles(t)
	dir := filepath.Join(f.cwd, "full")
	if err := os.Mkdir(dir, 0755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	orig := lines(1000, 40)
	f.write("full/f.txt", orig)
	fails(t, f.run("", tool("file_edit", "full/f.txt", "line 500 "+strings.Repeat("x", 30), "line 500 changed")),
		"No space left on device; the file is unchanged")
	fails(t, f.run("", tool("file_write", "full/f.txt", lines(1000, 41))), "No space left on device; the file is unchanged")
	if f.read("full/f.txt") != orig {
		t.Fatalf("a failed write on a full disk changed the file")
	}
	noTemps(t, dir)
}

// A replaced file keeps its mode; a symlink is
// followed and its target replaced, the link kept.
func TestAtomicWriteKeepsModeAndLink(t *testing.T) {
	f := newFiles(t)
	p := f.write("conf.txt", "a = 1\n")
	if err := os.Chmod(p, 0640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("conf.txt", filepath.Join(f.cwd, "link.txt")); err != nil {
		t.Fatal(err)
	}
	ok(t, f.run("", tool("file_edit", "link.txt", "a = 1", "a = 2")), "edited link.txt: 1 replacement")
	ok(t, f.run("", tool("file_write", "link.txt", "b = 3\n", "--append")), "appended link.txt: 6 bytes")
	if got := f.read("conf.txt"); got != "a = 2\nb = 3\n" {
		t.Errorf("target %q", got)
	}
	if l, err := os.Readlink(filepath.Join(f.cwd, "link.txt")); err != nil || l != "conf.txt" {
		t.Errorf("the link was replaced: %q %v", l, err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	// A new file gets the usual mode (0666 less the umask).
	ok(t, f.run("", tool("file_write", "fresh.txt", "x\n")), "created fresh.txt")
	if st, err := os.Stat(filepath.Join(f.cwd, "fresh.txt")); err != nil || st.Mode().Perm()&0600 != 0600 || st.Mode().Perm()&0111 != 0 {
		t.Errorf("new file mode %v %v", st.Mode().Perm(), err)
	}
	noTemps(t, f.cwd)
}

// In the tree, m/ and tmp/ take the temporary file and the rename; the
// session's own files (plan), which the daemon makes, are written in place.
func TestAtomicWriteInTree(t *testing.T) {
	f := newTree(t, nil)
	s := f.newSession("writer")
	ok(t, f.run(s, tool("file_write", f.mnt+"/tmp/scratch.txt", "one\n")), "created")
	ok(t, f.run(s, tool("file_edit", f.mnt+"/tmp/scratch.txt", "one", "two")), "edited")
	ok(t, f.run(s, tool("file_write", f.mnt+"/m/n.md", "note\n")), "created")
	ok(t, f.run(s, tool("file_write", f.mnt+"/s/"+s+"/plan", "- [ ] plan it\n")), "replaced")
	ok(t, f.run(s, tool("file_edit", f.mnt+"/s/"+s+"/plan", "plan it", "planned")), "edited")
	for name, want := range map[string]string{"tmp/scratch.txt": "two\n", "m/n.md": "note\n", "s/" + s + "/plan": "- [ ] planned\n"} {
		if got := readTree(t, f, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	es, _ := os.ReadDir(filepath.Join(f.mnt, "tmp"))
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left in tmp/: %s", e.Name())
		}
	}
}
