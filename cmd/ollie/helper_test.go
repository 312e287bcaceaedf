package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/mcpconf"
	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/testutil"
)

// TestOllieSandboxBinary builds ollie and ollie-sandbox as a user does
// and runs a stage through them: the daemon's resident helper must be
// ollie-sandbox, not ollie. Then ollie-sandbox is replaced by one built
// from a source that differs by a comment, as a helper left over from an
// older build would be: the daemon must say so in its log, and the stage
// must fail with the same words without running.
func TestOllieSandboxBinary(t *testing.T) {
	testutil.Require(t, "go")
	testutil.RequireLandlock(t) // without it stages run through no helper
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A copy of its own: the helper is replaced below.
	bin := filepath.Join(root, "bin")
	os.MkdirAll(bin, 0o755)
	for _, name := range []string{"ollie", sandbox.HelperName} {
		if out, err := exec.Command("cp", filepath.Join(builtBinaries(t), name), bin).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	llm := llmtest.NewTest(t, &llmtest.Script{
		Rules: []llmtest.Rule{
			{If: `^run ran1`, Then: llmtest.Turn{Calls: []llmtest.Call{llmtest.ExecuteCode("sh", `echo "staged $((6*7))"; touch ran1`)}}},
			{If: `^run ran2`, Then: llmtest.Turn{Calls: []llmtest.Call{llmtest.ExecuteCode("sh", `echo "staged $((6*7))"; touch ran2`)}}},
		},
		Default: &llmtest.Turn{Text: "done"},
	})
	cwd := filepath.Join(root, "proj")
	os.MkdirAll(cwd, 0o755)
	rt, err := os.MkdirTemp("", "olh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	env := []string{"HOME=" + filepath.Join(root, "home"), "PATH=/usr/bin:/bin", "OLLAMA_HOST=" + llm.URL}
	sock := filepath.Join(rt, "ollie.sock")

	d := startDaemonExe(t, filepath.Join(bin, "ollie"), env, sock)
	helper := residentHelperExe(t, d)
	if want := filepath.Join(bin, sandbox.HelperName); helper != want {
		t.Fatalf("the resident helper runs %s, want %s", helper, want)
	}
	if chat := turnIn(t, d, cwd, "one", "ran1"); !strings.Contains(chat, "staged 42") {
		t.Fatalf("the stage did not run through %s:\n%s", helper, chat)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ran1")); err != nil {
		t.Fatalf("the stage's file: %v", err)
	}
	d.kill9()

	// A helper of another build: the same source, one comment added.
	stale := filepath.Join(root, "stale")
	copyHelperSource(t, stale)
	f, err := os.OpenFile(filepath.Join(stale, "internal", "sandbox", "build.go"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n// another build\n")
	f.Close()
	goBuild(t, stale, bin, "./cmd/"+sandbox.HelperName)

	d = startDaemonExe(t, filepath.Join(bin, "ollie"), env, sock)
	const refusal = "is not from the build of the ollie that started it"
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(d.logText(), refusal) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not report the helper of another build:\n%s", d.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	chat := turnIn(t, d, cwd, "two", "ran2")
	if !strings.Contains(chat, refusal) || strings.Contains(chat, "staged 42") {
		t.Fatalf("the stage did not fail with the refusal:\n%s", chat)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ran2")); err == nil {
		t.Fatal("a helper of another build ran the stage")
	}
}

// built holds ollie, ollie-web, ollie-mcp and ollie-sandbox as ./run.sh builds
// them (static: CGO_ENABLED=0), for the tests that need the real
// binaries; TestMain removes them.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// builtBinaries builds them once for all the tests of this process and
// returns their directory.
func builtBinaries(t testing.TB) string {
	t.Helper()
	testutil.Require(t, "go")
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "ollie-bin"); built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", built.dir+"/", "ollie.dev/ollie/cmd/ollie", "ollie.dev/ollie/cmd/"+webName,
			"ollie.dev/ollie/cmd/"+mcpconf.Program, "ollie.dev/ollie/cmd/"+sandbox.HelperName)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// goBuild runs go build -o out/ pkgs in dir ("" for this package's).
func goBuild(t testing.TB, dir, out string, pkgs ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"build", "-o", out + "/"}, pkgs...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, b)
	}
}

// copyHelperSource copies go.mod, go.sum and the packages of this module
// that ollie-sandbox is built from to dst.
func copyHelperSource(t *testing.T, dst string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	mod := strings.TrimSpace(string(out))
	out, err = exec.Command("go", "list", "-deps", "-f",
		`{{if and .Module (eq .Module.Path "ollie.dev/ollie")}}{{.Dir}}{{end}}`, "ollie.dev/ollie/cmd/"+sandbox.HelperName).Output()
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(mod, "go.mod"), filepath.Join(mod, "go.sum")}
	for _, dir := range strings.Fields(string(out)) {
		gos, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		files = append(files, gos...)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(mod, f)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// residentHelperExe waits for d's resident helper and returns the
// executable it runs.
func residentHelperExe(t *testing.T, d *daemonProc) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		// Each thread's children: any of them may have started it.
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/task/*/children")
		var kids []string
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			kids = append(kids, strings.Fields(string(b))...)
		}
		for _, pid := range kids {
			if args, _ := os.ReadFile("/proc/" + pid + "/cmdline"); strings.Contains(string(args), "\x00-serve") {
				exe, err := os.Readlink("/proc/" + pid + "/exe")
				if err != nil {
					t.Fatal(err)
				}
				return exe
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no resident helper:\n%s", d.logText())
	return ""
}

// turnIn has a new session of d named name in cwd run a stage that makes
// the file mark in cwd, and returns the session's chat.
func turnIn(t *testing.T, d *daemonProc, cwd, name, mark string) string {
	t.Helper()
	fsys := d.dial()
	wr(t, fsys, "s/new", "cwd="+cwd+" name="+name)
	wr(t, fsys, "s/"+name+"/prompt", "run "+mark+"\n")
	rd(t, fsys, "s/"+name+"/wait")
	return rd(t, fsys, "s/"+name+"/chat")
}

// The binaries are built as ./run.sh builds them, static: no dynamic
// loader or libc to start in each process (docs/bench.md).
func TestBinariesAreStatic(t *testing.T) {
	b, err := os.ReadFile("../../run.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "CGO_ENABLED=0 go build") {
		t.Error("run.sh does not build with CGO_ENABLED=0, as builtBinaries does")
	}
	dir := builtBinaries(t)
	for _, name := range []string{"ollie", webName, mcpconf.Program, sandbox.HelperName} {
		f, err := elf.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a program interpreter: it is linked dynamically", name)
			}
		}
		f.Close()
	}
}
