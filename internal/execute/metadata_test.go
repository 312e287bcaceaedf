package execute

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The attacks of issue 10 finding 4: a stage plants code in .git (a hook,
// core.pager) that the user's next git command runs outside any sandbox.

// gitRun runs git in dir as the user would, outside any sandbox.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u",
		"GIT_COMMITTER_EMAIL=u@x", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func gitRepo(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to test the protection of .git")
	}
	mkdir(t, dir)
	gitRun(t, dir, "init", "-q")
	write(t, filepath.Join(dir, "README"), "hello\n")
	gitRun(t, dir, "add", "README")
	gitRun(t, dir, "commit", "-q", "-m", "first")
}

// tryOps is a python3 stage that tries each operation and prints, for
// each, the canary TRIED and then the errno name or OK.
func tryOps(ops [][2]string) Stage {
	src := "import errno, os\n" +
		"def tr(name, fn):\n" +
		"    print('TRIED', name, flush=True)\n" +
		"    try:\n" +
		"        fn(); print(name, 'OK')\n" +
		"    except OSError as e:\n" +
		"        print(name, errno.errorcode[e.errno])\n"
	for _, op := range ops {
		src += "tr(" + pyQuote(op[0]) + ", lambda: " + op[1] + ")\n"
	}
	return Stage{Language: "python3", Code: src}
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// wantErrnos requires each attempt's canary and its expected result.
func wantErrnos(t *testing.T, res *Result, want [][3]string) {
	t.Helper()
	out := string(res.Output)
	for _, w := range want {
		if !strings.Contains(out, "TRIED "+w[0]+"\n") {
			t.Errorf("%s: never tried:\n%s", w[0], res)
			continue
		}
		if !strings.Contains(out, "\n"+w[0]+" "+w[2]+"\n") {
			t.Errorf("%s: want %s, got:\n%s", w[0], w[2], out)
		}
	}
}

func opsOf(want [][3]string) [][2]string {
	var ops [][2]string
	for _, w := range want {
		ops = append(ops, [2]string{w[0], w[1]})
	}
	return ops
}

const plant = "open('.git/hooks/post-commit', 'w').write('#!/bin/sh\\ntouch PLANTED\\n')"

func TestMetadataReadOnly(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.cwd)
	write(t, filepath.Join(f.cwd, "evil"), "#!/bin/sh\ntouch PLANTED\n")
	attacks := [][3]string{
		{"plant hook", plant, "EROFS"},
		{"chmod a sample hook", "os.chmod('.git/hooks/pre-commit.sample', 0o755)", "EROFS"},
		{"append config", "open('.git/config', 'a').write('[core]\\n\\tpager = touch PLANTED\\n')", "EROFS"},
		{"remove config", "os.remove('.git/config')", "EROFS"},
		{"rename .git", "os.rename('.git', 'gone')", "EBUSY"},
		{"remove .git", "os.rmdir('.git')", "EBUSY"},
		{"rename hooks out", "os.rename('.git/hooks', 'hooks')", "EXDEV"},
		{"hard link into .git", "os.link('evil', '.git/hooks/post-commit')", "EROFS"},
		{"hard link out of .git", "os.link('.git/config', 'config')", "EXDEV"},
		{"symlink in .git", "os.symlink('/tmp', '.git/hooks/post-commit')", "EROFS"},
	}
	res := f.run(steps(tryOps(opsOf(attacks))))
	wantErrnos(t, res, attacks)
	f.wantDenied("git config core.pager", "Read-only file system", attempt("git config core.pager 'touch PLANTED'"))
	// The mount itself cannot be undone: Landlock refuses mount changes,
	// and a new user namespace gets the bind locked.
	for name, op := range map[string]string{
		"umount .git":                  "umount -l .git && touch .git/hooks/post-commit",
		"remount .git rw":              "mount -o remount,rw .git && touch .git/hooks/post-commit",
		"umount in a namespace":        "unshare -rm sh -c 'umount -l .git && touch .git/hooks/post-commit'",
		"bind the repo in a namespace": "unshare -rm sh -c 'mkdir -p m && mount --bind . m && touch m/.git/hooks/post-commit'",
	} {
		f.with(t).wantDenied(name, "", attempt(op)) // umount, remount or the touch after them fails
	}

	// The user makes the repository again (a namespace kept for the
	// old .git must not be reused): as read-only as the first.
	if err := os.RemoveAll(filepath.Join(f.cwd, ".git")); err != nil {
		t.Fatal(err)
	}
	gitRun(t, f.cwd, "init", "-q")
	gitRun(t, f.cwd, "add", "README")
	gitRun(t, f.cwd, "commit", "-q", "-m", "again")
	again := [][3]string{{"plant hook", plant, "EROFS"}}
	wantErrnos(t, f.run(steps(tryOps(opsOf(again)))), again)

	// What a stage does every day still works, .git read included.
	res = f.run(steps(bash(`set -e
echo a > top && echo b >> top && mkdir -p sub/deep && echo c > sub/deep/f
mv sub/deep/f sub/g && rm top && rm -r sub/deep && echo new > README
git status --porcelain`)))
	f.wantOK(res, " M README\n?? evil\n?? sub/\n")

	// The user's next commit runs nothing the stages planted.
	gitRun(t, f.cwd, "add", "-A")
	gitRun(t, f.cwd, "commit", "-q", "-m", "after the stages")
	if exists(filepath.Join(f.cwd, "PLANTED")) || exists(filepath.Join(f.cwd, ".git", "hooks", "post-commit")) {
		t.Fatal("a planted hook ran at the user's commit")
	}
}

func TestMetadataOfWorktree(t *testing.T) {
	f := newFixture(t)
	work := filepath.Join(f.root, "work")
	main, wt := filepath.Join(work, "main"), filepath.Join(work, "wt")
	gitRepo(t, main)
	gitRun(t, main, "worktree", "add", "-q", wt)
	// The whole of work/ is writable: without protection the worktree's
	// pointer leads a stage to the main repository's hooks.
	p := f.sb.Profiles["workspace"]
	p.Write = []string{work}
	f.sb.Profiles["work"] = p
	f.policy, f.cwd = "work", wt
	gitdir := filepath.Join(main, ".git", "worktrees", "wt")
	attacks := [][3]string{
		{"rewrite the pointer", "open('.git', 'w').write('gitdir: /tmp\\n')", "EROFS"},
		{"replace the pointer", "os.rename('README', '.git')", "EBUSY"},
		{"write the gitdir", "open(" + pyQuote(gitdir+"/HEAD") + ", 'w').write('x')", "EROFS"},
		{"plant in the common dir", "open(" + pyQuote(main+"/.git/hooks/post-commit") + ", 'w').write('x')", "EROFS"},
		{"plant through the main repo", "open('../main/.git/config', 'a').write('x')", "EROFS"},
		{"work tree of main still writable", "open('../main/new', 'w').write('x')", "OK"},
	}
	res := f.run(steps(tryOps(opsOf(attacks))))
	wantErrnos(t, res, attacks)
	gitRun(t, wt, "commit", "-q", "--allow-empty", "-m", "after the stages")
	if exists(filepath.Join(wt, "PLANTED")) || exists(filepath.Join(main, ".git", "hooks", "post-commit")) {
		t.Fatal("a planted hook ran at the user's commit")
	}
}

func TestOllieDirsReadOnlyInWritableRoot(t *testing.T) {
	f := newFixture(t)
	p := f.sb.Profiles["workspace"]
	p.Write = []string{"~/.config"} // contains ollie's configuration directory
	f.sb.Profiles["cfg"] = p
	f.policy = "cfg"
	cfgA := filepath.Join(f.cfgDir, "a")
	mkdir(t, cfgA)
	attacks := [][3]string{
		{"write an agent", "open(" + pyQuote(cfgA+"/default.json") + ", 'w').write('{}')", "EROFS"},
		{"write a tool", "open(" + pyQuote(f.tools+"/x") + ", 'w').write('x')", "EROFS"},
		{"rename the config dir", "os.rename(" + pyQuote(f.cfgDir) + ", " + pyQuote(f.cfgDir+"-old") + ")", "EBUSY"},
		{"other config writable", "open(" + pyQuote(filepath.Join(f.home, ".config", "other")) + ", 'w').write('x')", "OK"},
	}
	res := f.run(steps(tryOps(opsOf(attacks))))
	wantErrnos(t, res, attacks)

	// A writable root that holds ollie's data directory, which holds the
	// session's tmp: the data stays read-only, the tmp writable.
	p.Write = []string{"~/.local"}
	f.sb.Profiles["cfg"] = p
	attacks = [][3]string{
		{"write another session", "open(" + pyQuote(f.otherChat) + ", 'a').write('x')", "EROFS"},
		{"write the state dir", "open(" + pyQuote(f.stateDir+"/x") + ", 'w').write('x')", "EROFS"},
		{"write the tmp", "open(os.environ['TMPDIR'] + '/x', 'w').write('x')", "OK"},
		{"write next to the data", "open(" + pyQuote(filepath.Join(f.home, ".local", "x")) + ", 'w').write('x')", "OK"},
	}
	res = f.run(steps(tryOps(opsOf(attacks))))
	wantErrnos(t, res, attacks)
}

func TestMetadataOptOut(t *testing.T) {
	f := newFixture(t)
	gitRepo(t, f.cwd)
	p := f.sb.Profiles["workspace"]
	off := false
	p.ProtectMetadata = &off
	f.sb.Profiles["open"] = p
	f.policy = "open"
	want := [][3]string{{"plant hook", plant, "OK"}}
	wantErrnos(t, f.run(steps(tryOps(opsOf(want)))), want)
}
