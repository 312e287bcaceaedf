package daemon_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

func setup(t *testing.T) (*client.Fsys, string, string) {
	cfg := testutil.Home(t, nil)
	testutil.Daemon(t, cfg, daemon.Options{})
	return testutil.Dial(t, cfg), cfg.ConfigDir, cfg.DataDir
}

// write replaces (or creates) a file through 9P as `echo > f` would.
func write(fsys *client.Fsys, p string, data []byte) error {
	return fsys.WriteFile(ctx, p, data, 0644)
}

func TestAgentConfigValidated(t *testing.T) {
	fsys, cdir, _ := setup(t)
	orig, _ := os.ReadFile(filepath.Join(cdir, "a", "default.json"))
	for _, bad := range []struct{ data, want string }{
		{`{"bogus": 1}`, `unknown field "bogus"`},
		{`{"max_steps": "many"}`, "max_steps"},
		{`{"temperature": 9}`, "temperature"},
		{`{"hooks": {"onWhatever": ["x"]}}`, "unknown event"},
		{`{"prompt": [{"file": "../../etc/passwd"}]}`, "prompt[0]"},
		{`not json at all`, "invalid character"},
		{`{} {}`, "trailing data"},
		{"\x00\x01\x02binary", "NUL byte at offset 0"},
	} {
		err := write(fsys, "a/default.json", []byte(bad.data))
		mustFail(t, "a/default.json <- "+bad.data, err, errs.Invalid, bad.want)
		err = write(fsys, "a/fresh.json", []byte(bad.data))
		mustFail(t, "a/fresh.json <- "+bad.data, err, errs.Invalid, bad.want)
	}
	now, _ := os.ReadFile(filepath.Join(cdir, "a", "default.json"))
	if !bytes.Equal(orig, now) {
		t.Errorf("rejected writes changed a/default.json:\n%s", now)
	}
	if _, err := os.Stat(filepath.Join(cdir, "a", "fresh.json")); err == nil {
		t.Error("a rejected create left a/fresh.json behind")
	}
	big := append([]byte(`{"description": "`), bytes.Repeat([]byte("x"), 2<<20)...)
	mustFail(t, "2 MB agent config", write(fsys, "a/default.json", big), errs.TooLarge, "1 MiB")

	good := `{"model": "qwen3", "max_steps": 7}`
	if err := write(fsys, "a/mine.json", []byte(good)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(cdir, "a", "mine.json")); string(got) != good {
		t.Errorf("a/mine.json on disk = %q", got)
	}
}

func TestSkillFrontMatter(t *testing.T) {
	fsys, cdir, _ := setup(t)
	mustFail(t, "skill without front matter", write(fsys, "sk/x.md", []byte("just text\n")), errs.Invalid, "front matter")
	mustFail(t, "skill without description", write(fsys, "sk/x.md", []byte("---\nname: x\n---\nbody\n")), errs.Invalid, "description")
	mustFail(t, "unclosed front matter", write(fsys, "sk/x.md", []byte("---\nname: x\nsome prose here\nmore\n")), errs.Invalid, "closing")
	if _, err := os.Stat(filepath.Join(cdir, "sk", "x.md")); err == nil {
		t.Error("rejected skill left sk/x.md behind")
	}
	if err := write(fsys, "sk/x.md", []byte("---\nname: x\ndescription: does x\n---\nHow to x.\n")); err != nil {
		t.Fatal(err)
	}
	idx, err := fsys.ReadFile(ctx, "sk/idx")
	if err != nil || !strings.Contains(string(idx), "x: does x\n") {
		t.Errorf("sk/idx = %q, %v", idx, err)
	}
}

func TestToolIdxFromHeaders(t *testing.T) {
	fsys, cdir, _ := setup(t)
	script := "#!/bin/sh\n# description: Say hello.\n# args: NAME\necho hello \"$1\"\n"
	if err := write(fsys, "t/hello", []byte(script)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(cdir, "t", "hello"))
	if err != nil || fi.Mode().Perm()&0100 == 0 {
		t.Fatalf("t/hello on disk: %v %v, want executable", fi, err)
	}
	idx, _ := fsys.ReadFile(ctx, "t/idx")
	if !strings.Contains(string(idx), "hello: Say hello.; args: NAME\n") {
		t.Errorf("t/idx = %q", idx)
	}
	// mkdir in t/, as the MCP bridge does for its caches.
	d, err := fsys.Create(ctx, "t/mcp.d", plan9.DMDIR|0755, plan9.OREAD)
	if err != nil {
		t.Fatal(err)
	}
	d.Clunk(ctx)
	if err := write(fsys, "t/mcp.d/srv.idx", []byte("tool list\n")); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "create t/idx", write(fsys, "t/idx", []byte("x")), errs.Permission, "")
}

func TestBadNames(t *testing.T) {
	fsys, _, ddir := setup(t)
	for _, name := range []string{"has space", "semi;colon", "tab\tname", "ünïcode", strings.Repeat("n", 300), "new\nline"} {
		err := write(fsys, "m/"+name, []byte("x"))
		mustFail(t, "create m/"+name, err, errs.Invalid, "bad file name")
	}
	ents, _ := os.ReadDir(filepath.Join(ddir, "m"))
	if len(ents) != 0 {
		t.Errorf("bad names created files: %v", ents)
	}
	// Walking out of the tree lands at most at its root.
	_, err := fsys.ReadFile(ctx, "t/../../etc/passwd")
	mustFail(t, "read t/../../etc/passwd", err, errs.NotExist, "etc")
	_, err = fsys.ReadFile(ctx, "m/../../../../../etc/passwd")
	mustFail(t, "read m/../../../../../etc/passwd", err, errs.NotExist, "")
}

func TestReadOnlyFiles(t *testing.T) {
	fsys, cdir, ddir := setup(t)
	testutil.WriteFile(t, ddir, "tr/old.txt", "transcript", 0644)
	for _, p := range []string{"help", "backends", "p/base.md", "stats/uptime", "t/idx", "sk/idx", "tr/old.txt"} {
		f, err := fsys.Open(ctx, p, plan9.OWRITE)
		if err == nil {
			f.Clunk(ctx)
		}
		mustFail(t, "open "+p+" for writing", err, errs.Permission, "")
	}
	for _, p := range []string{"p/new.md", "u/new", "x/new", "tr/new", "stats/new", "new"} {
		mustFail(t, "create "+p, write(fsys, p, []byte("x")), errs.Permission, "")
	}
	mustFail(t, "remove p/base.md", fsys.Remove(ctx, "p/base.md"), errs.Permission, "")
	mustFail(t, "remove help", fsys.Remove(ctx, "help"), errs.Permission, "")
	mustFail(t, "remove m", fsys.Remove(ctx, "m"), errs.Permission, "")
	mustFail(t, "rename p/base.md", fsys.Rename(ctx, "p/base.md", "p/x.md"), errs.Permission, "")
	if _, err := os.Stat(filepath.Join(cdir, "p", "base.md")); err != nil {
		t.Error(err)
	}
	// tr/ allows rm.
	if err := fsys.Remove(ctx, "tr/old.txt"); err != nil {
		t.Error(err)
	}
}

func TestMemoryFiles(t *testing.T) {
	fsys, _, ddir := setup(t)
	line := append(bytes.Repeat([]byte("m"), 1<<20), '\n')
	if err := write(fsys, "m/big", line); err != nil {
		t.Fatal(err)
	}
	bin := make([]byte, 70000)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	if err := write(fsys, "m/bin", bin); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"big": line, "bin": bin} {
		got, err := fsys.ReadFile(ctx, "m/"+name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("m/%s read back %d bytes, %v; want %d", name, len(got), err, len(want))
		}
		disk, _ := os.ReadFile(filepath.Join(ddir, "m", name))
		if !bytes.Equal(disk, want) {
			t.Errorf("m/%s on disk differs", name)
		}
	}
	if err := fsys.Rename(ctx, "m/big", "m/large"); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "rename across directories", fsys.Rename(ctx, "m/large", "tmp/large"), errs.Unsupported, "")
	if err := fsys.Remove(ctx, "m/large"); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "stat removed", func() error { _, err := fsys.Stat(ctx, "m/large"); return err }(), errs.NotExist, "large")
}

func TestSymlinkEscapeDenied(t *testing.T) {
	fsys, _, ddir := setup(t)
	if err := os.Symlink("/etc", filepath.Join(ddir, "m", "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(ddir, "m", "pw")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"m/etc/passwd", "m/pw"} {
		if b, err := fsys.ReadFile(ctx, p); err == nil {
			t.Errorf("read %s through a symlink out of the tree: %q", p, b[:min(len(b), 20)])
		}
	}
	ents, err := fsys.ReadDir(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		t.Errorf("escaping symlink listed: %s", d.Name)
	}
}
