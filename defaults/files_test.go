package defaults_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFileRead(t *testing.T) {
	f := newFiles(t)
	f.write("a.txt", "one\ntwo\n\tthree\nfour")
	ok(t, f.run("", tool("file_read", "a.txt")), "     1\tone\n     2\ttwo\n     3\t\tthree\n     4\tfour\n")
	if out := ok(t, f.run("", tool("file_read", "a.txt", "2", "3"))); out != "     2\ttwo\n     3\t\tthree\n" {
		t.Errorf("lines 2-3:\n%q", out)
	}
	if out := ok(t, f.run("", tool("file_read", "a.txt", "-1"))); out != "     4\tfour\n" {
		t.Errorf("last line:\n%q", out)
	}
	if out := ok(t, f.run("", code("sh", "printf 'x\\ny\\n'"), tool("file_read", "-"))); out != "     1\tx\n     2\ty\n" {
		t.Errorf("stdin:\n%q", out)
	}
	f.write("empty", "")
	ok(t, f.run("", tool("file_read", "empty")), "(empty file)")

	// Bad input.
	fails(t, f.run("", tool("file_read")), "exited with status 2", "usage: file_read PATH [FROM [TO | +COUNT]]")
	fails(t, f.run("", tool("file_read", "a.txt", "x")), "FROM 'x' is not a line number")
	fails(t, f.run("", tool("file_read", "a.txt", "-2", "3")), "bad range")
	fails(t, f.run("", tool("file_read", "a.txt", "9")), "a.txt has 4 lines; line 9 is past the end")
	fails(t, f.run("", tool("file_read", "nope.txt")), "nope.txt: no such file")
	fails(t, f.run("", tool("file_read", ".")), "is a directory")
	f.write("bin", "\x7fELF\x00\x01\x02")
	fails(t, f.run("", tool("file_read", "bin")), "bin is a binary file")
	// ollie's own configuration (API keys) stays out of reach.
	secret := filepath.Join(f.cfg.ConfigDir, "ollie.json")
	writeRaw(t, secret, `{"backends":[]}`)
	fails(t, f.run("", tool("file_read", secret)), "permission denied")
}

func writeRaw(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0600); err != nil {
		t.Fatal(err)
	}
}

func TestFileReadCutsHugeFiles(t *testing.T) {
	f := newFiles(t)
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	b.WriteString(strings.Repeat("y", 5000) + "\n")
	f.write("big.txt", b.String())
	out := ok(t, f.run("", tool("file_read", "big.txt")), "   500\tline 500\n",
		"[cut at 500 lines: showed lines 1-500 of 3001; read on with: file_read big.txt 501]")
	if strings.Contains(out, "line 501\n") || len(out) > 24<<10+200 {
		t.Errorf("not cut at 500 lines (%d bytes)", len(out))
	}
	// Following the hint goes on where it stopped.
	ok(t, f.run("", tool("file_read", "big.txt", "501", "502")), "   501\tline 501\n   502\tline 502\n")
	out = ok(t, f.run("", tool("file_read", "big.txt", "3001")), "[... 3000 more characters]", "[1 long lines were cut at 2000 characters]")
	if len(out) > 2200 {
		t.Errorf("a long line was not cut: %d bytes", len(out))
	}
}

func TestFileWrite(t *testing.T) {
	f := newFiles(t)
	ok(t, f.run("", tool("file_write", "sub/dir/a.txt", "hello\n")), "created sub/dir/a.txt: 6 bytes")
	if got := f.read("sub/dir/a.txt"); got != "hello\n" {
		t.Errorf("content %q", got)
	}
	// Content from the stage before, as a pipeline.
	ok(t, f.run("", code("python3", "print('from stdin')"), tool("file_write", "sub/dir/a.txt")), "replaced sub/dir/a.txt: 11 bytes")
	ok(t, f.run("", tool("file_write", "sub/dir/a.txt", "more\n", "--append")), "appended sub/dir/a.txt: 5 bytes")
	// A flag after PATH alone: the content comes on stdin.
	ok(t, f.run("", code("sh", "echo tail"), tool("file_write", "sub/dir/a.txt", "--append")), "appended sub/dir/a.txt: 5 bytes")
	if got := f.read("sub/dir/a.txt"); got != "from stdin\nmore\ntail\n" {
		t.Errorf("content %q", got)
	}

	// Bad input: nothing to write does not wipe the file.
	fails(t, f.run("", tool("file_write", "sub/dir/a.txt")), "no content", "--allow-empty")
	if got := f.read("sub/dir/a.txt"); got != "from stdin\nmore\ntail\n" {
		t.Errorf("an empty write changed the file: %q", got)
	}
	ok(t, f.run("", tool("file_write", "empty.txt", "--allow-empty")), "created empty.txt: 0 bytes")
	fails(t, f.run("", tool("file_write")), "usage: file_write PATH")
	fails(t, f.run("", tool("file_write", "sub", "x")), "sub is a directory")
	// Outside what the session may write: the sandbox says no, the tool says so.
	fails(t, f.run("", tool("file_write", "/usr/local/ollie-test.txt", "x")), "permission denied")
	if _, err := os.Stat("/usr/local/ollie-test.txt"); err == nil {
		t.Error("the sandbox let a tool write /usr/local")
	}
}

func TestFileEdit(t *testing.T) {
	f := newFiles(t)
	src := "def f():\n    return 1\n\ndef g():\n    return 1\n"
	f.write("e.py", src)

	ok(t, f.run("", tool("file_edit", "e.py", "def g():\n    return 1", "def g():\n    return 2")),
		"--- a/e.py\n+++ b/e.py\n", "-    return 1\n+    return 2\n", "edited e.py: 1 replacement")
	if got := f.read("e.py"); got != "def f():\n    return 1\n\ndef g():\n    return 2\n" {
		t.Errorf("after edit:\n%s", got)
	}
	ok(t, f.run("", tool("file_edit", "e.py", "return", "yield", "--all")), "edited e.py: 2 replacements")

	// Several edits as JSON on stdin, all or nothing.
	f.write("e.py", src)
	ok(t, f.run("", code("sh", `printf '%s' '[{"old":"def f","new":"def ff"},{"old":"def g","new":"def gg"}]'`), tool("file_edit", "e.py")),
		"+def ff():", "+def gg():", "edited e.py: 2 replacements")
	before := f.read("e.py")
	fails(t, f.run("", code("sh", `echo '[{"old":"def ff","new":"def f"},{"old":"missing","new":"x"}]'`), tool("file_edit", "e.py")),
		"edit 2: OLD was not found in e.py")
	if f.read("e.py") != before {
		t.Error("a failed edit list changed the file")
	}

	// Bad input.
	f.write("e.py", src)
	fails(t, f.run("", tool("file_edit", "e.py", "return 1", "return 3")), "OLD occurs 2 times in e.py (at lines 2, 5)", "--all")
	fails(t, f.run("", tool("file_edit", "e.py", "def   f():", "x")), "different spacing or indentation starts at line 1")
	fails(t, f.run("", tool("file_edit", "e.py", "     1\tdef f():", "x")), "line numbers")
	fails(t, f.run("", tool("file_edit", "e.py", "def f", "def f")), "OLD and NEW are the same")
	fails(t, f.run("", tool("file_edit", "e.py", "", "x")), "OLD is empty")
	fails(t, f.run("", tool("file_edit", "nope.py", "a", "b")), "no such file (create it with file_write)")
	fails(t, f.run("", tool("file_edit", "e.py")), "no OLD and NEW", "usage")
	fails(t, f.run("", code("sh", "echo '{oops'"), tool("file_edit", "e.py")), "stdin is not valid JSON")
	fails(t, f.run("", code("sh", `echo '{"old":"a"}'`), tool("file_edit", "e.py")), "want an object with string keys old and new")
	f.write("bin", "ab\x00cd")
	fails(t, f.run("", tool("file_edit", "bin", "ab", "x")), "binary file")
	if f.read("e.py") != src {
		t.Error("a refused edit changed the file")
	}
}

func TestFileEditKeepsCRLF(t *testing.T) {
	f := newFiles(t)
	f.write("w.txt", "a\r\nb\r\nc\r\n")
	ok(t, f.run("", tool("file_edit", "w.txt", "a\nb", "x\ny")), "edited w.txt: 1 replacement")
	if got := f.read("w.txt"); got != "x\r\ny\r\nc\r\n" {
		t.Errorf("line ends lost: %q", got)
	}
}

func TestFileGlob(t *testing.T) {
	f := newFiles(t)
	for _, p := range []string{"main.go", "a/b.go", "a/b/c.go", "a/b/c_test.go", "a/x.txt", ".git/hooks/h.go", ".hidden.go"} {
		f.write(p, "package x\n")
		sameTime(t, filepath.Join(f.cwd, p))
	}
	sameTime(t, filepath.Join(f.cwd, "a", "b"))
	if out := ok(t, f.run("", tool("file_glob", "**/*.go"))); out != "a/b.go\na/b/c.go\na/b/c_test.go\nmain.go\n" {
		t.Errorf("**/*.go:\n%s", out)
	}
	if out := ok(t, f.run("", tool("file_glob", "*", "a"))); out != "b.go\nb/\nx.txt\n" {
		t.Errorf("* in a:\n%s", out)
	}
	ok(t, f.run("", tool("file_glob", ".*.go")), ".hidden.go")
	ok(t, f.run("", tool("file_glob", filepath.Join(f.cwd, "a", "*.txt"))), filepath.Join(f.cwd, "a", "x.txt"))
	ok(t, f.run("", tool("file_glob", "**/*.go", "--max", "2")), "a/b.go\na/b/c.go\n[cut: 2 of 4 matches shown")

	// Bad input.
	fails(t, f.run("", tool("file_glob", "*.rs")), "exited with status 1", "no files match *.rs", "'**/*.rs'")
	fails(t, f.run("", tool("file_glob", "*", "nodir")), "nodir: no such directory")
	fails(t, f.run("", tool("file_glob")), "usage: file_glob")
	fails(t, f.run("", tool("file_glob", "*", "--max", "x")), "--max wants a positive number")
}

// sameTime gives p one fixed modification time, so that file_glob's
// newest-first order falls back to the path.
func sameTime(t *testing.T, p string) {
	t.Helper()
	when := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
}

func TestFileGrep(t *testing.T) {
	for name, env := range map[string][]string{"python": nil} {
		t.Run(name, func(t *testing.T) {
			f := newFiles(t)
			f.write("src/a.go", "package a\n\nfunc Alpha() {}\nfunc beta() {}\n")
			f.write("src/b.py", "def alpha():\n    pass\n")
			f.write(".secret/c.go", "func Alpha() {}\n")
			run := func(args ...string) call { return f.runEnv("", env, tool("file_grep", args...)) }

			if out := ok(t, run(`func \w+\(`)); out != "src/a.go:3:func Alpha() {}\nsrc/a.go:4:func beta() {}\n" {
				t.Errorf("regex:\n%s", out)
			}
			if out := ok(t, run("alpha", "-i", "src")); out != "src/a.go:3:func Alpha() {}\nsrc/b.py:1:def alpha():\n" {
				t.Errorf("-i:\n%s", out)
			}
			if out := ok(t, run("alpha", "-i", "--glob", "*.py")); out != "src/b.py:1:def alpha():\n" {
				t.Errorf("--glob:\n%s", out)
			}
			if out := ok(t, run("a", "-l", "src")); out != "src/a.go\nsrc/b.py\n" {
				t.Errorf("-l:\n%s", out)
			}
			ok(t, run("Alpha", "-C", "1", "src/a.go"), "src/a.go-2-\n", "src/a.go:3:func Alpha() {}\n", "src/a.go-4-func beta() {}\n")
			ok(t, run("f", "-F", "-n", "src/a.go"), "src/a.go:3:func Alpha() {}")

			// Capped output.
			var b strings.Builder
			for i := 0; i < 500; i++ {
				fmt.Fprintf(&b, "match %d %s\n", i, strings.Repeat("z", 1000))
			}
			f.write("big.txt", b.String())
			out := ok(t, run("match", "big.txt", "--max", "50"), "[cut: 50 of 500 lines shown")
			if n := strings.Count(out, "\n"); n != 51 || len(out) > 50*700 {
				t.Errorf("cap: %d lines, %d bytes", n, len(out))
			}

			// Bad input.
			fails(t, run("nothing-like-this"), "exited with status 1", "no matches for nothing-like-this in .")
			fails(t, run("x", "nope"), "nope: no such file or directory")
			fails(t, run("("), "exited with status 2")
			fails(t, run(), "usage: file_grep")
			fails(t, run("-z", "x"), "unknown option -z")
			fails(t, run("x", "-C", "many"), "-C wants a number")
		})
	}
}
