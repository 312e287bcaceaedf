package defaults_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// probeTool is installed in t/ by the test: from inside a stage it tries
// every operation on every path it is given and writes what happened to
// probe-VARIANT.json in the cwd. TRIED in each record shows the attempt
// was made; the result is "ok" or the errno's name.
const probeTool = `#!/usr/bin/env python3
# description: test probe: tries every operation on the paths it is given
import errno, json, os, sys
variant = sys.argv[1]
root = os.environ["OLLIE"]
own = os.path.relpath(os.environ["OLLIE_SESSION"], root)
targets = json.load(open("targets-%s.json" % variant))
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def mk(p):
    os.close(os.open(os.path.join(p, ".probe-" + variant), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
out = []
for t in targets:
    rel = t["path"].replace("$OWN", own)
    p = os.path.join(root, rel)
    r = {"path": t["path"], "tried": "TRIED"}
    if t["dir"]:
        r["read"] = attempt(lambda: os.listdir(p))
        r["create"] = attempt(lambda: mk(p))
        r["remove"] = attempt(lambda: os.rmdir(p))
    else:
        r["read"] = attempt(lambda: os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK)))
        r["write"] = attempt(lambda: os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK)))
        r["remove"] = attempt(lambda: os.unlink(p))
    out.append(r)
with open("probe-%s.json" % variant, "w") as f:
    json.dump(out, f)
print("probed %d paths" % len(out))
`

// A target is a path of the tree the probe tries, and what the table
// of NAMESPACE.md ("What a stage may do in the tree") lets a stage do.
type target struct {
	Path  string          `json:"path"` // relative to the tree; $OWN is the probing session's directory
	Dir   bool            `json:"dir"`
	allow map[string]bool // read write create remove
}

// expect is the table, written here again on purpose: the test must not
// ask the code under test what the code should do. own is the probing
// session's directory (s/NAME or b/JOB/K), ownJobs the jobs it spawned.
func expect(rel string, dir bool, own string, ownJobs map[string]bool, sessionDirs map[string]bool) map[string]bool {
	r, rw, rc := map[string]bool{"read": true}, map[string]bool{"read": true, "write": true}, map[string]bool{"read": true, "create": true}
	none := map[string]bool{}
	p := strings.Split(rel, "/")
	switch p[0] {
	case "":
		return r
	case "help", "backends", "stats", "t", "sk", "p", "u", "tr":
		return r
	case "m", "tmp":
		if dir {
			return rc
		}
		return rw
	case "a", "x", "errors":
		return none
	}
	// s/ and b/
	if len(p) == 1 {
		return r
	}
	for i := len(p); i >= 2; i-- {
		sd := strings.Join(p[:i], "/")
		if !sessionDirs[sd] && sd != own {
			continue
		}
		rest := p[i:]
		switch {
		case len(rest) == 0:
			return r
		case len(rest) > 1 || dir: // ask/ and below
			return none
		case sd == own && (rest[0] == "plan" || rest[0] == "spawn" || rest[0] == "mcp"):
			return rw
		case sd == own && strings.Contains(" chat context reply state usage queue ", " "+rest[0]+" "):
			return r
		case sd != own && (rest[0] == "chat" || rest[0] == "reply"):
			return r
		}
		return none
	}
	if p[0] == "b" && len(p) == 2 && p[1] != "new" && p[1] != "q" {
		return r // a job's directory
	}
	if p[0] == "b" && len(p) == 3 {
		if ownJobs[p[1]] && (p[2] == "state" || p[2] == "result") {
			return r
		}
		return none
	}
	if len(p) == 2 && p[1] != "new" {
		return r // s/idx and the scripts
	}
	return none
}

// TestStageTable is the hostile-model battery: a populated tree (sessions
// with a queue and a pending consent request, jobs of the prober and of
// the user, memory, transcripts, agents, plugins), then, from inside real
// stages started by the scripted model through the real daemon, every
// operation on every path, as inline code, as a t/ tool, as a parallel
// branch and as a sub-agent. What happened must be exactly the table.
func TestStageTable(t *testing.T) {
	probeCall := func(variant string) llmtest.Call {
		var steps []map[string]any
		switch variant {
		case "inline":
			steps = []map[string]any{code("python3", "import os, sys\nsys.argv = ['probe', 'inline']\nexec(open(os.environ['OLLIE'] + '/t/probe_tree').read())")}
		case "tool", "subagent":
			steps = []map[string]any{tool("probe_tree", variant)}
		case "parallel":
			steps = []map[string]any{{"parallel": []map[string]any{tool("probe_tree", "parallel"), code("bash", "true")}}}
		}
		b, _ := json.Marshal(map[string]any{"steps": steps, "timeout": 60})
		return llmtest.Call{Name: "execute_code", Args: b}
	}
	elevated, _ := json.Marshal(map[string]any{"steps": []map[string]any{{"language": "bash", "code": "echo elevated", "elevated": true}}})
	var rules []llmtest.Rule
	for _, v := range []string{"inline", "tool", "parallel"} {
		rules = append(rules, llmtest.Rule{If: `^probe ` + v + `$`, Then: llmtest.Turn{Calls: []llmtest.Call{probeCall(v)}}})
	}
	f := newTree(t, &llmtest.Script{Rules: append(rules,
		llmtest.Rule{If: `^probe subagent$`, Then: llmtest.Turn{Calls: []llmtest.Call{callTool("subagent_spawn", "probe as a child")}}},
		llmtest.Rule{If: `^probe as a child`, Then: llmtest.Turn{Calls: []llmtest.Call{probeCall("subagent")}}},
		llmtest.Rule{If: `^spawn one$`, Then: llmtest.Turn{Calls: []llmtest.Call{callTool("subagent_spawn", "say hi")}}},
		llmtest.Rule{If: `^ask me$`, Then: llmtest.Turn{Calls: []llmtest.Call{{Name: "execute_code", Args: elevated}}}},
		llmtest.Rule{Role: "tool", If: `.`, Then: llmtest.Turn{Text: "done"}},
	)})
	testutil.WriteFile(t, filepath.Join(f.cfg.ConfigDir, "t"), "probe_tree", probeTool, 0755)
	testutil.WriteFile(t, filepath.Join(f.cfg.ConfigDir, "x"), "prime", "#!/bin/sh\necho primed\n", 0755)
	if err := f.fsys.WriteFile(ctx, "m/note.md", []byte("a note\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.fsys.WriteFile(ctx, "tmp/scratch", []byte("scratch\n"), 0); err != nil {
		t.Fatal(err)
	}
	ask := func(s, q string) {
		t.Helper()
		if err := f.fsys.WriteFile(ctx, "s/"+s+"/prompt", []byte(q), 0); err != nil {
			t.Fatal(err)
		}
		if w := readTree(t, f, "s/"+s+"/wait"); w != "idle\n" {
			t.Fatalf("%s: wait = %q\n%s", q, w, readTree(t, f, "s/"+s+"/chat"))
		}
	}
	f.newSession("gone")
	ask("gone", "hello")
	f.endSession("gone") // a transcript in tr/
	prober := f.newSession("prober")
	ask("prober", "spawn one") // a job of the prober's
	if err := f.fsys.WriteFile(ctx, "b/new", []byte("cwd="+f.cwd+"\n---\nhello\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.newSession("other")
	if err := f.fsys.WriteFile(ctx, "s/other/prompt", []byte("ask me"), 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a pending consent request of other", func() bool {
		es, err := os.ReadDir(filepath.Join(f.mnt, "s/other/ask"))
		return err == nil && len(es) > 0
	})
	if err := f.fsys.WriteFile(ctx, "s/other/fifo.in", []byte("queued prompt"), 0); err != nil {
		t.Fatal(err)
	}

	ownJobs := map[string]bool{}
	for _, j := range f.d.Batch.List() {
		if j.Spec().Parent == prober {
			ownJobs[j.ID()] = true
		}
	}
	if len(ownJobs) != 1 || len(f.d.Batch.List()) != 2 {
		t.Fatalf("jobs: %d of the prober's, %d in all; want 1 and 2", len(ownJobs), len(f.d.Batch.List()))
	}
	// Every path of the tree, walked as the user.
	var paths []target
	sessionDirs := map[string]bool{"s/prober": true, "s/other": true}
	err := filepath.WalkDir(f.mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(f.mnt, p)
		if rel == "." {
			rel = ""
		}
		parts := strings.Split(rel, "/")
		if len(parts) == 3 && parts[0] == "b" && d.IsDir() {
			sessionDirs[rel] = true // a job's member
		}
		paths = append(paths, target{Path: rel, Dir: d.IsDir()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run := func(variant, own string, extra []target) {
		t.Helper()
		var ts []target
		for _, tg := range append(paths, extra...) {
			if tg.Path == own { // the prober's own directory is $OWN for a child
				continue
			}
			tg.allow = expect(tg.Path, tg.Dir, own, ownJobs, sessionDirs)
			if variant == "subagent" {
				tg.allow = expect(strings.Replace(tg.Path, "$OWN", "own/dir", 1), tg.Dir, "own/dir", nil, sessionDirs)
			}
			ts = append(ts, tg)
		}
		b, _ := json.Marshal(ts)
		if err := os.WriteFile(filepath.Join(f.cwd, "targets-"+variant+".json"), b, 0644); err != nil {
			t.Fatal(err)
		}
		ask("prober", "probe "+variant)
		var got []map[string]string
		out, err := os.ReadFile(filepath.Join(f.cwd, "probe-"+variant+".json"))
		if err != nil {
			t.Fatalf("%s: the probe left no results: %v\n%s", variant, err, readTree(t, f, "s/prober/chat"))
		}
		if err := json.Unmarshal(out, &got); err != nil || len(got) != len(ts) {
			t.Fatalf("%s: %d results for %d targets: %v", variant, len(got), len(ts), err)
		}
		tried, wrong := 0, 0
		for i, g := range got {
			if g["tried"] != "TRIED" || g["path"] != ts[i].Path {
				t.Fatalf("%s: result %d is for %q (%q), want %q", variant, i, g["path"], g["tried"], ts[i].Path)
			}
			for _, op := range []string{"read", "write", "create", "remove"} {
				res, ok := g[op]
				if !ok {
					continue
				}
				tried++
				allowed := ts[i].allow[op]
				if (res == "ok") != allowed {
					wrong++
					t.Errorf("%s: %s %s: %s, but the table says %s", variant, op, ts[i].Path, res, map[bool]string{true: "allowed", false: "refused"}[allowed])
				}
				if res != "ok" && res != "EACCES" && res != "EPERM" && !(op == "remove" && res == "ENOTEMPTY") {
					t.Errorf("%s: %s %s failed with %s, not a refusal", variant, op, ts[i].Path, res)
				}
			}
		}
		t.Logf("%s: %d operations on %d paths tried, %d not as the table says", variant, tried, len(ts), wrong)
	}
	run("tool", "s/prober", nil)
	run("inline", "s/prober", nil)
	run("parallel", "s/prober", nil)
	// A sub-agent: its own directory is its member directory; the prober
	// is another session to it.
	var child []target
	for _, n := range []string{"", "plan", "spawn", "mcp", "chat", "reply", "queue", "cfg", "ctl", "env", "fifo.out", "prompt", "wait", "events"} {
		child = append(child, target{Path: strings.TrimSuffix("$OWN/"+n, "/"), Dir: n == ""})
	}
	child = append(child, target{Path: "$OWN/ask", Dir: true})
	run("subagent", "", child)

	// Nothing the probes refused happened: the consent request is still
	// pending, the queue still queued, the agents unchanged.
	if es, _ := os.ReadDir(filepath.Join(f.mnt, "s/other/ask")); len(es) == 0 {
		t.Errorf("the pending consent request of other is gone")
	}
	if q := readTree(t, f, "s/other/queue"); !strings.Contains(q, "queued prompt") {
		t.Errorf("other's queue lost its prompt: %q", q)
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stage cannot approve its own elevation: one parallel branch asks to
// leave the sandbox, its sibling tries to answer the request. The answer
// is refused, the request stays pending until a person answers it, and
// the elevated code never runs when the person denies it.
func TestStageCannotAnswerConsent(t *testing.T) {
	answer := `import errno, os, time
p = os.environ["OLLIE_SESSION"] + "/ask/1"
for _ in range(3000):
    try:
        fd = os.open(p, os.O_WRONLY)
        os.write(fd, b"allow\n")
        os.close(fd)
        res = "ok"
    except OSError as e:
        if e.errno == errno.ENOENT:
            time.sleep(0.01)
            continue
        res = errno.errorcode[e.errno]
    print("TRIED", res)
    open("tried-" + res, "w").close()
    break
`
	steps, _ := json.Marshal(map[string]any{"steps": []map[string]any{{"parallel": []map[string]any{
		{"language": "bash", "code": "touch escaped; echo escaped", "elevated": true},
		code("python3", answer),
	}}}})
	f := newTree(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `^escalate`, Then: llmtest.Turn{Calls: []llmtest.Call{{Name: "execute_code", Args: steps}}}},
		{Role: "tool", If: `.`, Then: llmtest.Turn{Text: "done"}},
	}})
	s := f.newSession("victim")
	if err := f.fsys.WriteFile(ctx, "s/"+s+"/prompt", []byte("escalate"), 0); err != nil {
		t.Fatal(err)
	}
	var tried string
	waitFor(t, "the sibling branch's attempt", func() bool {
		m, _ := filepath.Glob(filepath.Join(f.cwd, "tried-*"))
		if len(m) > 0 {
			tried = strings.TrimPrefix(filepath.Base(m[0]), "tried-")
		}
		return tried != ""
	})
	if tried != "EACCES" && tried != "EPERM" {
		t.Fatalf("a stage answered its own consent request: %s", tried)
	}
	// The request is still pending, and says who asks under which policy.
	req := readTree(t, f, "s/"+s+"/ask/1")
	for _, want := range []string{"session: " + s, "policy: workspace", "touch escaped"} {
		if !strings.Contains(req, want) {
			t.Errorf("the request lacks %q:\n%s", want, req)
		}
	}
	if err := f.fsys.WriteFile(ctx, "s/"+s+"/ask/1", []byte("deny\n"), 0); err != nil {
		t.Fatal(err)
	}
	if w := readTree(t, f, "s/"+s+"/wait"); w != "idle\n" {
		t.Fatalf("wait = %q", w)
	}
	if _, err := os.Stat(filepath.Join(f.cwd, "escaped")); err == nil {
		t.Fatalf("the elevated branch ran:\n%s", readTree(t, f, "s/"+s+"/chat"))
	}
}

// A sub-agent cannot be sent where its parent may not go: outside the
// parent's cwd (ollie's agents directory above all, whose hooks run
// unsandboxed), to /, or onto another backend.
func TestSpawnNarrows(t *testing.T) {
	f := newTree(t, nil)
	s := f.newSession("parent")
	if err := os.Mkdir(filepath.Join(f.cwd, "sub"), 0755); err != nil {
		t.Fatal(err)
	}
	try := `import errno, os, sys
for spec in sys.argv[1:]:
    print("TRIED", spec.split("\n")[0], end=" ")
    try:
        fd = os.open(os.environ["OLLIE_SESSION"] + "/spawn", os.O_RDWR)
        os.write(fd, (spec + "\n---\nhello\n").encode())
        os.lseek(fd, 0, 0)
        got = os.read(fd, 100).decode().strip()
        os.close(fd)
        print("ok" if got else "empty")
    except OSError as e:
        print(errno.errorcode[e.errno])
`
	specs := []string{"cwd=" + filepath.Join(f.cfg.ConfigDir, "a"), "cwd=/", "cwd=" + os.TempDir(),
		"cwd=" + filepath.Join(f.cwd, "sub") + "\nbackend=nope", "cwd=" + filepath.Join(f.cwd, "sub")}
	b, _ := json.Marshal(specs)
	out := ok(t, f.run(s, code("python3", "import json, sys\nsys.argv = ['x'] + json.loads(r'''"+string(b)+"''')\n"+try)))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l, "TRIED ") {
			f := strings.Fields(l)
			got = append(got, f[len(f)-1])
		}
	}
	want := []string{"EACCES", "EACCES", "EACCES", "EACCES", "ok"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("spawn results %v, want %v:\n%s", got, want, out)
	}
}

// No way of making a session accepts a working directory that hands its
// stages the system, the home directory or ollie itself.
func TestSessionCwdRefused(t *testing.T) {
	f := newTree(t, nil)
	home, _ := os.UserHomeDir()
	for _, cwd := range []string{"/", home, f.cfg.ConfigDir, filepath.Join(f.cfg.ConfigDir, "a"), f.cfg.DataDir, f.cfg.RuntimeDir} {
		err := f.fsys.WriteFile(ctx, "s/new", []byte("cwd="+cwd+"\n"), 0)
		if err == nil {
			t.Errorf("s/new accepted cwd=%s", cwd)
			continue
		}
		if !strings.Contains(err.Error(), "cwd") {
			t.Errorf("cwd=%s: unclear error %v", cwd, err)
		}
	}
	s := f.newSession("moving")
	if err := f.fsys.WriteFile(ctx, "s/"+s+"/cfg", []byte("cwd="+f.cfg.ConfigDir+"/t\n"), 0); err == nil {
		t.Errorf("cfg accepted a cwd inside ollie's configuration")
	}
	if err := f.fsys.WriteFile(ctx, "b/new", []byte("cwd=/\n---\nhi\n"), 0); err == nil {
		t.Errorf("b/new accepted cwd=/")
	}
}

// A stage that reaches the daemon's socket directly is served as itself:
// the kernel's account of the peer (SO_PEERCRED) decides, so it can
// neither write an agent (whose hooks run unsandboxed) nor attach on
// behalf of another process.
func TestStageOnTheSocket(t *testing.T) {
	f := newTree(t, nil)
	s := f.newSession("direct")
	out := ok(t, f.run(s, code("python3", "import sys\nsys.argv = ['x', '"+f.cfg.Socket+"']\n"+testutil.Attack9P)))
	if !strings.Contains(out, "TRIED connect") {
		t.Fatalf("the attempt did not run:\n%s", out)
	}
	if strings.Contains(out, "refused") {
		t.Logf("the sandbox kept the stage off the socket:\n%s", out)
		return
	}
	for _, want := range []string{"TRIED attach-as-pid error: permission denied: a sandboxed caller cannot attach on behalf",
		"TRIED open-agent error: permission denied: sandboxed code may not write a/default.json", "open-help ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A hook is the user's own code, but not a person: through the mount it
// can read a consent request of another session but not answer it.
func TestHookCannotAnswerConsent(t *testing.T) {
	elevated, _ := json.Marshal(map[string]any{"steps": []map[string]any{{"language": "bash", "code": "touch escaped", "elevated": true}}})
	f := newTree(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `^ask me`, Then: llmtest.Turn{Calls: []llmtest.Call{{Name: "execute_code", Args: elevated}}}},
	}})
	victim := f.newSession("victim")
	if err := f.fsys.WriteFile(ctx, "s/"+victim+"/prompt", []byte("ask me"), 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "victim's consent request", func() bool {
		es, err := os.ReadDir(filepath.Join(f.mnt, "s/victim/ask"))
		return err == nil && len(es) > 0
	})
	hook := `echo TRIED > ` + f.cwd + `/hook-tried; if printf allow > "$OLLIE/s/victim/ask/1"; then echo ok; else echo refused; fi > ` + f.cwd + `/hook-result; cat "$OLLIE/s/victim/ask/1" > ` + f.cwd + `/hook-read`
	agent, _ := json.Marshal(map[string]any{"prompt": []map[string]string{{"file": "base.md"}}, "hooks": map[string][]string{"preTurn": {hook}}})
	if err := f.fsys.WriteFile(ctx, "a/hooky.json", agent, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.fsys.WriteFile(ctx, "s/new", []byte("cwd="+f.cwd+"\nname=hooked\nagent=hooky\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.fsys.WriteFile(ctx, "s/hooked/prompt", []byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	readTree(t, f, "s/hooked/wait")
	if got := f.read("hook-tried"); got != "TRIED\n" {
		t.Fatalf("the hook did not run: %q", got)
	}
	if got := f.read("hook-result"); got != "refused\n" {
		t.Fatalf("a hook answered a consent request: %q", got)
	}
	if got := f.read("hook-read"); !strings.Contains(got, "touch escaped") {
		t.Errorf("the hook could not read the request: %q", got)
	}
	if es, _ := os.ReadDir(filepath.Join(f.mnt, "s/victim/ask")); len(es) == 0 {
		t.Fatalf("the request was answered")
	}
}
