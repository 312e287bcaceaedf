package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/redact"
	"ollie.dev/ollie/internal/testutil"
)

// leakEnv is a daemon whose backends echo the request headers, keys
// included, in their errors, and whose hook and x/ plugin try to leak
// the key too.
type leakEnv struct {
	llm              *llmtest.Server
	home, cwd, sock  string
	log              string
	keys             map[string]string // what -> value: none may appear anywhere
	passed, withheld string            // values of GITHUB_TOKEN (pass_env) and OTHER_SECRET
}

func secretValue(t *testing.T, what string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "ollie-test-" + what + "-" + hex.EncodeToString(b)
}

func newLeakEnv(t *testing.T) *leakEnv {
	e := &leakEnv{keys: map[string]string{"openai key": secretValue(t, "openai"), "anthropic key": secretValue(t, "anthropic"),
		"key in a base_url": secretValue(t, "userinfo")},
		passed: secretValue(t, "passed"), withheld: secretValue(t, "withheld")}
	// Every request fails with the echo, but one that asks the model to
	// stream the key (which a model could only know by a leak), in pieces
	// of three bytes.
	e.llm = llmtest.NewTest(t, &llmtest.Script{Default: &llmtest.Turn{EchoHeaders: true}, EchoModels: true, Chunk: 3,
		Rules: []llmtest.Rule{{If: "stream the key", Then: llmtest.Turn{Text: "here it is: " + e.keys["openai key"] + " done"}}}})
	root, _ := filepath.EvalSymlinks(t.TempDir())
	e.home, e.cwd, e.log = filepath.Join(root, "home"), filepath.Join(root, "proj"), filepath.Join(root, "daemon.log")
	cfgDir := filepath.Join(e.home, ".config", "ollie")
	for _, d := range []string{e.cwd, filepath.Join(cfgDir, "a"), filepath.Join(cfgDir, "x")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	k3 := e.keys["key in a base_url"]
	write := func(p, s string, perm os.FileMode) {
		if err := os.WriteFile(p, []byte(s), perm); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cfgDir, "ollie.json"), `{"backends": [
		{"name": "echo", "kind": "openai", "base_url": "`+e.llm.URL+`/v1", "api_key_env": "ECHO_LLM_KEY", "model": "llmtest", "context_window": 32768},
		{"name": "echo-ant", "kind": "anthropic", "base_url": "`+e.llm.URL+`", "api_key_env": "ECHO_ANT_KEY", "model": "llmtest", "context_window": 32768},
		{"name": "shown", "kind": "ollama", "base_url": "http://user:`+k3+`@127.0.0.1:9/x?api-key=`+k3+`&region=eu&Access_Token=`+k3+`"}]}`, 0o600)
	// The key file is outside every directory the daemon serves; the hook
	// and the plugin print it, as a careless one would.
	write(filepath.Join(e.home, "k.txt"), e.keys["openai key"], 0o600)
	write(filepath.Join(cfgDir, "x", "envdump"), "#!/bin/sh\nenv > \"$HOME/plugin.env\"\necho \"plugin saw $(cat \"$HOME/k.txt\")\"\n", 0o700)
	write(filepath.Join(cfgDir, "a", "leaky.json"), `{"prompt": [{"file": "base.md"}, {"exec": "x/envdump"}],
		"hooks": {"preTurn": ["env > \"$HOME/hook.env\"; echo \"hook saw $(cat \"$HOME/k.txt\")\" >&2; exit 1"]},
		"pass_env": ["GITHUB_TOKEN"]}`, 0o600)
	rt, _ := os.MkdirTemp("", "olr")
	t.Cleanup(func() { os.RemoveAll(rt) })
	e.sock = filepath.Join(rt, "ollie.sock")
	cmd := exec.Command(os.Args[0], "serve", "-socket", e.sock)
	cmd.Env = []string{"HOME=" + e.home, "PATH=/usr/bin:/bin", "OLLIE_TEST_MAIN=1",
		"ECHO_LLM_KEY=" + e.keys["openai key"], "ECHO_ANT_KEY=" + e.keys["anthropic key"],
		"GITHUB_TOKEN=" + e.passed, "OTHER_SECRET=" + e.withheld}
	logf, err := os.Create(e.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		testutil.UnmountUnder(e.home) // the killed daemon's tmp quotas
	})
	for i := 0; probe(e.sock) != nil; i++ {
		if i > 1000 {
			b, _ := os.ReadFile(e.log)
			t.Fatalf("daemon did not start:\n%s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e
}

// TestKeysNeverLeak makes every backend echo its key in an error (chat,
// models), has a hook and a plugin print it, then reads every file of the
// tree, every error the tree answers, the daemon log and every file the
// daemon wrote on disk, and requires that no key appears anywhere.
func TestKeysNeverLeak(t *testing.T) {
	e := newLeakEnv(t)
	fsys, err := client.Mount(context.Background(), e.sock, "tester", "")
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for _, s := range []struct{ name, backend string }{{"leak", "echo"}, {"leak2", "echo-ant"}} {
		wr(t, fsys, "s/new", "cwd="+e.cwd+" name="+s.name+" agent=leaky backend="+s.backend)
		wr(t, fsys, "s/"+s.name+"/prompt", "hello\n")
		if w := rd(t, fsys, "s/"+s.name+"/wait"); !strings.HasPrefix(w, "error") {
			t.Fatalf("%s: wait = %q, want the echoed error", s.name, w)
		}
		wr(t, fsys, "s/"+s.name+"/ctl", "save")
	}

	// A reply that streams the key split across pieces.
	wr(t, fsys, "s/new", "cwd="+e.cwd+" name=stream backend=echo")
	wr(t, fsys, "s/stream/prompt", "stream the key\n")
	if w := rd(t, fsys, "s/stream/wait"); w != "idle\n" {
		t.Fatalf("stream: wait = %q", w)
	}

	// A batch job whose members fail the same way.
	ctx := context.Background()
	f, err := fsys.Open(ctx, "b/new", plan9.ORDWR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(ctx, []byte("cwd="+e.cwd+" agent=leaky backend=echo parallel=2\n---\nhello"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, _ := f.Read(ctx, buf, 0)
	f.Clunk(ctx)
	job := strings.TrimSpace(string(buf[:n]))
	rd(t, fsys, "b/"+job+"/result")

	// The echo really happened: the server sent the keys back.
	echoes := strings.Join(e.llm.Echoes(), "\n")
	for _, k := range []string{"openai key", "anthropic key"} {
		if !strings.Contains(echoes, e.keys[k]) {
			t.Fatalf("the server never echoed the %s; echoes:\n%s", k, echoes)
		}
	}
	if !strings.Contains(echoes, "Authorization: Bearer "+e.keys["openai key"]) || !strings.Contains(echoes, "X-Api-Key: "+e.keys["anthropic key"]) {
		t.Fatalf("the echoes lack the credential headers:\n%s", echoes)
	}

	seen := walkTree(t, fsys, e)
	// Each edge was reached and redacted, so the absence of keys is not luck.
	for _, p := range []string{"s/leak/chat", "s/leak/wait", "s/leak/events", "s/leak/models (error)",
		"s/leak/systemprompt", "s/leak2/chat", "s/leak2/models (error)", "b/" + job + "/1/chat", "b/" + job + "/2/wait", "s/stream/chat", "s/stream/reply", "s/stream/context"} {
		if !strings.Contains(seen[p], redact.Marker) {
			t.Errorf("%s shows no %s:\n%s", p, redact.Marker, seen[p])
		}
	}
	if b := seen["backends"]; !strings.Contains(b, "shown ollama http://127.0.0.1:9/x?region=eu -") {
		t.Errorf("backends = %q, want the base URL without userinfo and secret parameters", b)
	}

	files := 0
	filepath.WalkDir(e.home, func(p string, d fs.DirEntry, err error) error {
		// The key file and the configuration are the user's, and hold the
		// keys by design; neither is served.
		if err != nil || d.IsDir() || p == filepath.Join(e.home, "k.txt") || p == filepath.Join(e.home, ".config/ollie/ollie.json") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // the socket, the lock
		}
		files++
		e.noKey(t, "disk "+strings.TrimPrefix(p, e.home), string(b))
		return nil
	})
	if files < 10 {
		t.Errorf("only %d files on disk", files)
	}
	if !fileHas(t, filepath.Join(e.home, ".local/share/ollie/tr"), redact.Marker) {
		t.Errorf("no transcript in tr/ shows %s", redact.Marker)
	}
	b, _ := os.ReadFile(e.log)
	e.noKey(t, "daemon log", string(b))

	// Hooks and plugins: scrubbed environments.
	for _, name := range []string{"hook.env", "plugin.env"} {
		b, err := os.ReadFile(filepath.Join(e.home, name))
		if err != nil {
			t.Fatalf("%s: %v (the hook or plugin did not run)", name, err)
		}
		env := string(b)
		for _, bad := range []string{"ECHO_LLM_KEY", "ECHO_ANT_KEY", "OTHER_SECRET", e.withheld} {
			if strings.Contains(env, bad) {
				t.Errorf("%s has %s:\n%s", name, bad, env)
			}
		}
		if !strings.Contains(env, "GITHUB_TOKEN="+e.passed) || !strings.Contains(env, "PATH=") {
			t.Errorf("%s lacks GITHUB_TOKEN (pass_env) or PATH:\n%s", name, env)
		}
	}
}

func (e *leakEnv) noKey(t *testing.T, where, text string) {
	t.Helper()
	for what, k := range e.keys {
		if strings.Contains(text, k) {
			t.Errorf("%s shows the %s:\n%s", where, what, text)
		}
	}
}

// blocking are the files a walk must not read: clone files that create,
// a consuming read, and reads that wait for a change. events is read up
// to what is on disk.
var blocking = map[string]bool{"new": true, "spawn": true, "statewait": true, "fifo.out": true}

// walkTree reads every file of the tree (errors included, as their text
// is what a stage sees), checks each for keys and returns what it read,
// by path.
func walkTree(t *testing.T, fsys *client.Fsys, e *leakEnv) map[string]string {
	seen := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		ds, err := fsys.ReadDir(context.Background(), dir)
		if err != nil {
			t.Fatalf("ls %s: %v", dir, err)
		}
		for _, d := range ds {
			p := path.Join(dir, d.Name)
			switch {
			case d.Mode&plan9.DMDIR != 0:
				walk(p)
			case blocking[d.Name] || d.Mode&0444 == 0:
			case d.Name == "events":
				seen[p] = readEvents(t, fsys, p, e.eventsOnDisk(t, fsys, dir))
			default:
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				b, err := fsys.ReadFile(ctx, p)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("read %s blocked: list it in blocking", p)
				}
				seen[p] = string(b)
				if err != nil {
					seen[p+" (error)"] = err.Error()
				}
			}
		}
	}
	walk("")
	if len(seen) < 60 {
		t.Errorf("the walk read only %d files", len(seen))
	}
	for p, text := range seen {
		e.noKey(t, "tree "+p, text)
	}
	return seen
}

// eventsOnDisk is the events log of the session served at dir (s/NAME or
// b/JOB/K), found by the id its cfg shows.
func (e *leakEnv) eventsOnDisk(t *testing.T, fsys *client.Fsys, dir string) string {
	for _, line := range strings.Split(rd(t, fsys, dir+"/cfg"), "\n") {
		if id, ok := strings.CutPrefix(line, "id="); ok {
			var found string
			filepath.WalkDir(filepath.Join(e.home, ".local/share/ollie"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Name() == "events.jsonl" && filepath.Base(filepath.Dir(p)) == id {
					found = p
				}
				return nil
			})
			if found == "" {
				t.Fatalf("no events.jsonl on disk for session %s", id)
			}
			return found
		}
	}
	t.Fatalf("%s/cfg shows no id", dir)
	return ""
}

// readEvents reads a session's events, whose reads block at the end, up
// to the size of the log on disk.
func readEvents(t *testing.T, fsys *client.Fsys, p, disk string) string {
	fi, err := os.Stat(disk)
	if err != nil {
		t.Fatalf("events on disk: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fid, err := fsys.Open(ctx, p, plan9.OREAD)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer fid.Clunk(context.Background())
	var out []byte
	buf := make([]byte, 8192)
	for int64(len(out)) < fi.Size() {
		n, err := fid.Read(ctx, buf, int64(len(out)))
		if err != nil {
			t.Fatalf("read %s: %v after %d of %d bytes (%s):\n%s", p, err, len(out), fi.Size(), disk, out)
		}
		out = append(out, buf[:n]...)
	}
	return string(out)
}

func fileHas(t *testing.T, dir, s string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}
