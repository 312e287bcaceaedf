package defaults_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A JS project as models meet it: node_modules and dist listed in
// .gitignore, a nested .ignore, a symlink loop, files of different ages.
func jsProject(t *testing.T, f *fixture) {
	t.Helper()
	f.write(".gitignore", "node_modules/\n/dist\n*.log\n!keep.log\n")
	if err := os.Mkdir(filepath.Join(f.cwd, ".git"), 0755); err != nil {
		t.Fatal(err)
	}
	f.write("src/app.js", "function start() { return alpha(); }\n")
	f.write("src/util.ts", "export function alpha() { return 1; }\n")
	f.write("src/gen/.ignore", "*.js\n")
	f.write("src/gen/out.js", "function alpha() {}\n")
	f.write("dist/app.js", "function alpha() {}\n")
	f.write("lib/dist/x.js", "// not the root's dist\n")
	f.write("debug.log", "alpha\n")
	f.write("keep.log", "alpha\n")
	for i := 0; i < 300; i++ {
		f.write("node_modules/pkg/i"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+".js", "function alpha() {}\n")
	}
	if err := os.Symlink("..", filepath.Join(f.cwd, "src", "up")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(f.cwd, "lib/dist/x.js"), old, old)
}

func TestFileGlobIgnores(t *testing.T) {
	f := newFiles(t)
	jsProject(t, f)
	out := ok(t, f.run("", tool("file_glob", "**/*.js")), "src/app.js\n", "lib/dist/x.js\n", "[note: src/up/: a symlink loop")
	for _, bad := range []string{"node_modules", "dist/app.js\n", "src/gen/out.js", "src/up/src"} {
		if strings.Contains(strings.ReplaceAll(out, "lib/dist/x.js\n", ""), bad) {
			t.Errorf("ignored %s listed:\n%s", bad, out)
		}
	}
	// Newest first: the old file comes last.
	if !strings.HasSuffix(strings.SplitN(out, "[note", 2)[0], "lib/dist/x.js\n") {
		t.Errorf("not newest first:\n%s", out)
	}
	ok(t, f.run("", tool("file_glob", "**/*.{js,ts}")), "src/app.js\n", "src/util.ts\n")
	ok(t, f.run("", tool("file_glob", "*.log")), "keep.log\n")
	// --no-ignore lists them too, after the project's own files.
	out = ok(t, f.run("", tool("file_glob", "**/*.js", "--no-ignore", "--max", "400")), "node_modules/pkg/", "dist/app.js")
	if !strings.HasPrefix(out, "src/app.js\n") {
		t.Errorf("--no-ignore: the project's files are not first:\n%s", out[:200])
	}
	fails(t, f.run("", tool("file_glob", "**/out.js")), "1 ignored by .gitignore/.ignore match: add --no-ignore")
	// Below the repository's root, the root's .gitignore still holds.
	out = ok(t, f.run("", tool("file_glob", "*", filepath.Join(f.cwd, "src"))))
	if strings.Contains(out, "gen/out.js") {
		t.Errorf("in src:\n%s", out)
	}
}

func TestFileGrepOptions(t *testing.T) {
	f := newFiles(t)
	jsProject(t, f)
	f.write("src/m.go", "package m\n\n// Alpha does a thing.\nfunc Alpha() int {\n\treturn 1\n}\n\nfunc beta() {}\n")
	run := func(args ...string) call { return f.run("", tool("file_grep", args...)) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"alpha", "-l"}, "keep.log\nsrc/app.js\nsrc/util.ts\n"},
		{[]string{"-il", "alpha"}, "keep.log\nsrc/app.js\nsrc/m.go\nsrc/util.ts\n"},
		{[]string{"alpha", "--include=*.ts"}, "src/util.ts:1:export function alpha() { return 1; }\n"},
		{[]string{"Alpha", "--type", "go", "-A", "1"}, "src/m.go:3:// Alpha does a thing.\nsrc/m.go:4:func Alpha() int {\nsrc/m.go-5-\treturn 1\n"},
		{[]string{"return 1", "src/m.go", "-B1"}, "src/m.go-4-func Alpha() int {\nsrc/m.go:5:\treturn 1\n"},
		{[]string{"-C", "1", "func", "src/m.go"}, "src/m.go-3-// Alpha does a thing.\nsrc/m.go:4:func Alpha() int {\nsrc/m.go-5-\treturn 1\n--\nsrc/m.go-7-\nsrc/m.go:8:func beta() {}\n"},
		{[]string{"-c", "func", "--glob", "*.go"}, "src/m.go:2\n"},
		{[]string{"-n", `\bbeta\(\)`, "src"}, "src/m.go:8:func beta() {}\n"},
		{[]string{"alpha", "-i", "--glob", "!*.js", "--glob", "*.{go,ts}"}, "src/m.go:3:// Alpha does a thing.\nsrc/m.go:4:func Alpha() int {\nsrc/util.ts:1:export function alpha() { return 1; }\n"},
		{[]string{"-e", "-x", "src/m.go", "-F"}, ""},
	} {
		c2 := run(c.args...)
		if c.want == "" {
			fails(t, c2, "no matches for -x")
			continue
		}
		out := regexp.MustCompile(`\[note: [^\n]*\n`).ReplaceAllString(ok(t, c2), "")
		if out != c.want {
			t.Errorf("file_grep %q:\n%s\nwant:\n%s", c.args, out, c.want)
		}
	}
	ok(t, run("alpha", "--no-ignore", "-l"), "node_modules/pkg/", "dist/app.js", "src/gen/out.js", "debug.log")
	fails(t, run("(unclosed"), "exited with status 2", "bad pattern (unclosed", "Python's re", "add -F")
	fails(t, run(`(?<name>x)`), "(?P<name>...)")
	fails(t, run(`start\|alpha`), "for alternation write a|b")
	fails(t, run("x", "--type", "cobol"), "unknown --type cobol")
	fails(t, run("x", "--frobnicate"), "unknown option --frobnicate")
}

// Searching inside the tree never blocks on its blocking files (events,
// statewait, wait, fifo.out): the search ends and finds the session's plan.
func TestFileGrepInTree(t *testing.T) {
	f := newTree(t, nil)
	s := f.newSession("searcher")
	if err := f.fsys.WriteFile(ctx, "s/"+s+"/plan", []byte("- [ ] find the needle\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.fsys.WriteFile(ctx, "b/new", []byte("cwd="+f.cwd+"\n---\nhello\n"), 0); err != nil {
		t.Fatal(err)
	}
	ok(t, f.run(s, tool("file_grep", "needle", f.mnt+"/s")), "/plan:1:- [ ] find the needle")
	ok(t, f.run(s, tool("file_grep", "find the needle", f.mnt, "-l")), "/plan\n")
	ok(t, f.run(s, tool("file_glob", "**/plan", f.mnt+"/s")), "plan")
}

// file_glob and file_grep carry the same walker (the tools are single
// files); the two copies must not drift apart.
func TestWalkCopiesAgree(t *testing.T) {
	block := func(name string) string {
		b, err := os.ReadFile(filepath.Join("t", name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i, j := strings.Index(s, "# --- walk:"), strings.Index(s, "# --- end of walk ---")
		if i < 0 || j < i {
			t.Fatalf("%s has no walk block", name)
		}
		return s[i:j]
	}
	if block("file_glob") != block("file_grep") {
		t.Fatal("the walk blocks of file_glob and file_grep differ: copy one over the other")
	}
}

// git's ignore rules, one case each: a directory rule, ** at the front
// and in the middle, a re-inclusion, an anchored path, a class, and a
// rule of a parent directory's .gitignore when searching below it.
func TestIgnoreRules(t *testing.T) {
	f := newFiles(t)
	if err := os.Mkdir(filepath.Join(f.cwd, ".git"), 0755); err != nil {
		t.Fatal(err)
	}
	f.write(".gitignore", "build/\n**/gen/*.go\n!a/gen/keep.go\ndocs/*.md\nx/**/tmp\n*.[oa]\n")
	for _, p := range []string{"build/b.go", "a/gen/g.go", "a/gen/keep.go", "b/c/gen/h.go", "docs/d.md",
		"docs/sub/e.md", "x/y/z/tmp/t.go", "x/tmp/u.go", "m.o", "m.c", "lib/build.go", "src/main.go"} {
		f.write(p, "x\n")
		sameTime(t, filepath.Join(f.cwd, p))
	}
	out := ok(t, f.run("", tool("file_glob", "**/*.{go,md,o,c}")))
	want := "a/gen/keep.go\ndocs/sub/e.md\nlib/build.go\nm.c\nsrc/main.go\n"
	if out != want {
		t.Errorf("listed:\n%s\nwant:\n%s", out, want)
	}
	if out := ok(t, f.run("", tool("file_glob", "*", filepath.Join(f.cwd, "a", "gen")))); out != "keep.go\n" {
		t.Errorf("below the root:\n%s", out)
	}
	if out := ok(t, f.run("", tool("file_glob", "{src,lib}/{main,build}.go"))); out != "lib/build.go\nsrc/main.go\n" {
		t.Errorf("braces:\n%s", out)
	}
}
