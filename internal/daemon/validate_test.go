package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

// validSetup is a daemon with a known secret (an Anthropic key) and
// backends ollama and anthropic, whose models file fails as a backend
// that cannot be reached does.
func validSetup(t *testing.T) (*client.Fsys, *config.Config) {
	cfg := testutil.Home(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-supersecret-1234", "OLLAMA_HOST": "http://127.0.0.1:1"})
	models := func(ctx context.Context, s *session.Session) ([]string, error) {
		return nil, errs.E(errs.Unavailable, "backend ollama: dial tcp 127.0.0.1:1: connect: connection refused")
	}
	testutil.Daemon(t, cfg, daemon.Options{Runner: testutil.NewEchoRunner(), Models: models})
	return testutil.Dial(t, cfg), cfg
}

// env refuses what a program's environment cannot hold, names the key,
// and never echoes the value.
func TestEnvValues(t *testing.T) {
	fsys, _ := validSetup(t)
	p := "s/" + newSession(t, fsys, "cwd="+t.TempDir()) + "/env"
	if err := write(fsys, p, []byte("GOOD=1\nAPI_TOKEN=hunter2hunter2\n")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data string
		k    errs.Kind
		want string
	}{
		{"X=a\x00b\n", errs.Invalid, "NUL byte"},
		{"X=caf\xe9\n", errs.Invalid, "not UTF-8 text"},
		{"X=" + strings.Repeat("v", 40<<10) + "\n", errs.TooLarge, "env: X: value of 40960 bytes, over 32768"},
		{"secret TOKEN hunter3hunter3\n", errs.Invalid, "a line without ="},
		{"1BAD=hunter3hunter3\n", errs.Invalid, `"1BAD"=`},
	} {
		err := write(fsys, p, []byte(c.data))
		mustFail(t, "env <- "+short(c.data), err, c.k, c.want)
		if err != nil && strings.Contains(err.Error(), "hunter3") {
			t.Errorf("env error shows the value: %v", err)
		}
	}
	if got := read(t, fsys, p); got != "API_TOKEN=(secret)\nGOOD=1\n" {
		t.Errorf("env after rejected writes = %q", got)
	}
}

// Numbers in cfg and job specs are read whole: junk after them, NaN and
// exponents are refused with the key and the allowed range.
func TestNumbersStrict(t *testing.T) {
	fsys, cfg := validSetup(t)
	dir := t.TempDir()
	id := newSession(t, fsys, "cwd="+dir)
	for _, c := range []struct{ file, data, want string }{
		{"cfg", "max_steps=1e3\n", "max_steps=1e3: want a whole number from 1 to 10000"},
		{"cfg", "max_steps=2 junk\n", "max_steps=2 junk: want a whole number from 1 to 10000"},
		{"cfg", "max_tokens=0x10\n", "max_tokens=0x10: want a whole number from 1 to 1048576"},
		{"cfg", "temperature=NaN\n", "temperature=NaN: want a number from 0 to 2"},
		{"cfg", "temperature=0.5 warm\n", "want a number from 0 to 2"},
		{"cfg", "backend=nosuch\n", `no backend "nosuch" (configured: `},
		{"cfg", "model=a\x00b\n", "cfg: NUL byte"},
		{"spawn", "parallel=1e3\n---\nhi\n", "parallel=1e3: want a whole number from 1 to 256"},
		{"spawn", "parallel=2 junk\n---\nhi\n", "parallel=2 junk: want a whole number from 1 to 256"},
		{"spawn", "parallel=2\n---\nhi \xff\n", "job spec is not UTF-8 text"},
		{"spawn", "parallel=2\n---\nhi \x00\n", "job spec: NUL byte"},
	} {
		mustFail(t, c.file+" <- "+short(c.data), write(fsys, "s/"+id+"/"+c.file, []byte(c.data)), errs.Invalid, c.want)
	}
	for _, spec := range []string{"parallel=1e3", "parallel=2 junk", "parallel=0", "parallel=9999"} {
		err := write(fsys, "b/new", []byte("cwd="+dir+"\n"+spec+"\n---\nhi\n"))
		mustFail(t, "b/new <- "+spec, err, errs.Invalid, "want a whole number from 1 to 256")
	}
	if jobs, _ := os.ReadDir(filepath.Join(cfg.DataDir, "b")); len(jobs) > 0 {
		t.Errorf("rejected specs made jobs: %v", jobs)
	}
}

// a/*.json names only what exists: a backend, a sandbox profile, prompt
// parts in p/.
func TestAgentReferences(t *testing.T) {
	fsys, cfg := validSetup(t)
	cdir := cfg.ConfigDir
	for _, c := range []struct{ data, want string }{
		{`{"backend":"nosuch"}`, `backend: no backend "nosuch" (configured: anthropic, ollama)`},
		{`{"sandbox":"yolo"}`, `sandbox: no profile "yolo" (profiles: offline, readonly, workspace)`},
		{`{"prompt":[{"file":"base.md"},{"file":"gone.md"}]}`, "prompt[1]: no prompt part p/gone.md (p/ holds: base.md)"},
		{"{\"description\":\"caf\xe9\"}", "not UTF-8 text"},
	} {
		mustFail(t, "a/x.json <- "+c.data, write(fsys, "a/x.json", []byte(c.data)), errs.Invalid, c.want)
	}
	if _, err := os.Stat(filepath.Join(cdir, "a", "x.json")); err == nil {
		t.Error("a rejected agent configuration is on disk")
	}
	good := `{"backend":"anthropic","sandbox":"readonly","prompt":[{"file":"base.md"}]}`
	if err := write(fsys, "a/x.json", []byte(good)); err != nil {
		t.Errorf("a good agent configuration: %v", err)
	}
}

// A skill's name: is its file name, on write and on rename.
func TestSkillNames(t *testing.T) {
	fsys, cfg := validSetup(t)
	cdir := cfg.ConfigDir
	mustFail(t, "name differs", write(fsys, "sk/x.md", []byte("---\nname: y\ndescription: d\n---\n")), errs.Invalid, `name: "y" differs from the file name (want name: x`)
	mustFail(t, "no .md", write(fsys, "sk/x", []byte("---\nname: x\ndescription: d\n---\n")), errs.Invalid, "a skill is sk/NAME.md")
	mustFail(t, "NUL", write(fsys, "sk/x.md", []byte("---\nname: x\ndescription: d\x00\n---\n")), errs.Invalid, "NUL byte")
	if err := write(fsys, "sk/x.md", []byte("---\nname: x\ndescription: does x\n---\nbody\n")); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "mv sk/x.md sk/y.md", fsys.Rename(ctx, "sk/x.md", "sk/y.md"), errs.Invalid, `name: "x" differs from the file name (want name: y`)
	if _, err := os.Stat(filepath.Join(cdir, "sk", "x.md")); err != nil {
		t.Errorf("a refused rename moved the skill: %v", err)
	}
	if err := write(fsys, "sk/z.md", []byte("---\ndescription: no name is fine\n---\n")); err != nil {
		t.Errorf("a skill without name: %v", err)
	}
}

// Every refused write is in errors, one line each, newest last, with its
// path and message, and without the secrets it may have carried.
func TestErrorsFile(t *testing.T) {
	fsys, _ := validSetup(t)
	id := newSession(t, fsys, "cwd="+t.TempDir())
	write(fsys, "s/"+id+"/cfg", []byte("temperature=9\n"))
	write(fsys, "s/"+id+"/cfg", []byte("model=sk-ant-supersecret-1234\tx\n")) // the error quotes the value
	_, merr := fsys.ReadFile(ctx, "s/"+id+"/models")
	mustFail(t, "models", merr, errs.Unavailable, "connection refused")
	got := read(t, fsys, "errors")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("errors = %q", got)
	}
	for i, want := range []string{
		" user write s/" + id + "/cfg: bad request: temperature=9: want a number from 0 to 2",
		" user write s/" + id + "/cfg: bad request: bad model name",
		" user open s/" + id + "/models: unavailable: backend ollama: dial tcp 127.0.0.1:1: connect: connection refused",
	} {
		if l := lines[len(lines)-3+i]; !strings.Contains(l, want) || l[4] != '-' {
			t.Errorf("errors line %d = %q, want a time and %q", i, l, want)
		}
	}
	if strings.Contains(got, "supersecret") {
		t.Errorf("errors shows a secret:\n%s", got)
	}
	st, err := fsys.Stat(ctx, "errors")
	if err != nil || st.Length != uint64(len(got)) {
		t.Errorf("stat errors: length %d, %v; want %d", st.Length, err, len(got))
	}
	for i := range 150 {
		write(fsys, "s/"+id+"/cfg", []byte(fmt.Sprintf("max_steps=%dx\n", i)))
	}
	lines = strings.Split(strings.TrimSuffix(read(t, fsys, "errors"), "\n"), "\n")
	if len(lines) != 100 || !strings.Contains(lines[99], "max_steps=149x") || !strings.Contains(lines[0], "max_steps=50x") {
		t.Errorf("after 150 more errors: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	st2, _ := fsys.Stat(ctx, "errors")
	if st2.Qid.Vers == st.Qid.Vers {
		t.Errorf("errors kept its version across new errors")
	}
	if !strings.Contains(read(t, fsys, "help"), "errors ") {
		t.Errorf("help does not document errors")
	}
}

func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q...", s[:40])
	}
	return fmt.Sprintf("%q", s)
}
