package defaults_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every edit of a CRLF file writes CRLFs, whatever OLD and NEW hold.
func TestFileEditCRLFEveryEdit(t *testing.T) {
	f := newFiles(t)
	f.write("w.txt", "a\r\nb\r\nc\r\n")
	ok(t, f.run("", tool("file_edit", "w.txt", "b", "x\ny\nz")), "edited w.txt: 1 replacement")
	if got := f.read("w.txt"); got != "a\r\nx\r\ny\r\nz\r\nc\r\n" {
		t.Errorf("one line into three: %q", got)
	}
	ok(t, f.run("", tool("file_edit", "w.txt", "y\r\nz\r\n", "")), "edited")
	ok(t, f.run("", code("sh", `printf '%s' '[{"old":"x","new":"p\nq","all":true}]'`), tool("file_edit", "w.txt")), "edited")
	if got := f.read("w.txt"); got != "a\r\np\r\nq\r\nc\r\n" {
		t.Errorf("after more edits: %q", got)
	}
	// A file of LFs stays LF.
	f.write("u.txt", "a\nb\n")
	ok(t, f.run("", tool("file_edit", "u.txt", "b", "x\r\ny")), "edited")
	if got := f.read("u.txt"); got != "a\nx\r\ny\n" {
		t.Errorf("an LF file: %q", got)
	}
}

// A Latin-1 file: file_read shows it and says how to read it right;
// file_edit refuses to guess and names the flag; with --encoding both
// work, and the bytes outside the edit are kept.
func TestNonUTF8Files(t *testing.T) {
	f := newFiles(t)
	f.write("l1.txt", "caf\xe9 = 1\nna\xefve = 2\n")
	ok(t, f.run("", tool("file_read", "l1.txt")), "caf\uFFFD = 1", "[l1.txt is not UTF-8 (first at line 1)", "--encoding latin-1")
	ok(t, f.run("", tool("file_read", "l1.txt", "--encoding", "latin-1")), "     1\tcafé = 1\n     2\tnaïve = 2\n")
	fails(t, f.run("", tool("file_edit", "l1.txt", "= 2", "= 3")), "l1.txt is not UTF-8 (byte 0xe9 at line 1)", "--encoding latin-1")
	out := ok(t, f.run("", tool("file_edit", "l1.txt", "naïve = 2", "naïve = 3", "--encoding", "latin-1")), "+naïve = 3", "edited l1.txt: 1 replacement")
	if strings.Contains(out, "binary output") {
		t.Errorf("the diff is not shown as text:\n%s", out)
	}
	if got := f.read("l1.txt"); got != "caf\xe9 = 1\nna\xefve = 3\n" {
		t.Errorf("after the edit: %q", got)
	}
	fails(t, f.run("", tool("file_edit", "l1.txt", "= 3", "= €", "--encoding", "latin-1")), "cannot be written as latin-1", "l1.txt is unchanged")
	ok(t, f.run("", tool("file_write", "new.txt", "été\n", "--encoding", "latin-1")), "created new.txt: 4 bytes")
	if got := f.read("new.txt"); got != "\xe9t\xe9\n" {
		t.Errorf("written as latin-1: %q", got)
	}
	fails(t, f.run("", tool("file_read", "l1.txt", "--encoding", "klingon")), "unknown encoding")
}

// file_read's budget is in bytes of what it prints, below execute_code's
// 32 KiB cut: a CJK file is cut by file_read, with a footer that is true,
// and never by execute_code.
func TestFileReadBudgetInBytes(t *testing.T) {
	f := newFiles(t)
	var b strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&b, "%d %s\n", i, strings.Repeat("漢字かな", 15))
	}
	f.write("cjk.txt", b.String())
	out := ok(t, f.run("", tool("file_read", "cjk.txt")), "[cut at 24 KiB: showed lines 1-")
	if len(out) > 25<<10 || strings.Contains(out, "output cut") || strings.Contains(out, "more bytes") {
		t.Fatalf("%d bytes, or cut by execute_code:\n%s", len(out), out[len(out)-300:])
	}
	// Every line the footer claims is there.
	var last int
	fmt.Sscanf(out[strings.LastIndex(out, "showed lines 1-")+len("showed lines 1-"):], "%d", &last)
	for n := 1; n <= last; n++ {
		if !strings.Contains(out, fmt.Sprintf("%6d\t%d ", n, n)) {
			t.Fatalf("line %d is missing though the footer says 1-%d", n, last)
		}
	}
	ok(t, f.run("", tool("file_read", "cjk.txt", fmt.Sprint(last+1), "+2")), fmt.Sprintf("%6d\t%d ", last+1, last+1))
}

// The ranges models type: Claude's offset and limit, FROM +COUNT, the
// tail of a file with and without a last newline.
func TestFileReadRanges(t *testing.T) {
	f := newFiles(t)
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	f.write("n.txt", b.String())
	f.write("nonl.txt", "a\nb\nc")
	want := func(from, to int) string {
		var w strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&w, "%6d\tl%d\n", i, i)
		}
		return w.String()
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"100", "50"}, want(100, 149)}, // offset limit
		{[]string{"100", "+3"}, want(100, 102)},
		{[]string{"10", "12"}, want(10, 12)},
		{[]string{"--offset", "5", "--limit", "2"}, want(5, 6)},
		{[]string{"--offset=199"}, want(199, 200)},
		{[]string{"-3"}, want(198, 200)},
		{[]string{"-300"}, want(1, 200)},
	} {
		if out := ok(t, f.run("", tool("file_read", append([]string{"n.txt"}, c.args...)...))); out != c.want {
			t.Errorf("file_read n.txt %v:\n%s", c.args, out)
		}
	}
	if out := ok(t, f.run("", tool("file_read", "nonl.txt", "-2"))); out != "     2\tb\n     3\tc\n" {
		t.Errorf("tail without a last newline: %q", out)
	}
	fails(t, f.run("", tool("file_read", "n.txt", "--limit")), "--limit wants a value")
	fails(t, f.run("", tool("file_read", "n.txt", "--lines", "3")), "unknown option --lines")
}

// The tail of a file larger than the memory the reader may have: read
// from the end, in blocks (a 64 MB file, 50 MB of address space).
func TestFileReadTailOfHugeFile(t *testing.T) {
	f := newFiles(t)
	p := f.write("huge.log", "")
	fh, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	n := 0
	for size := 0; size < 64<<20; n++ {
		k, _ := fmt.Fprintf(w, "log line %d\n", n+1)
		size += k
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	tdir := filepath.Join(f.cfg.ConfigDir, "t")
	out := ok(t, f.run("", code("bash", "ulimit -v 50000\n"+tdir+"/file_read huge.log -2")))
	if want := fmt.Sprintf("%6d\tlog line %d\n%6d\tlog line %d\n", n-1, n-1, n, n); out != want {
		t.Errorf("tail: %q, want %q", out, want)
	}
}
