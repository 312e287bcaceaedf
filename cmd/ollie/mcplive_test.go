package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/mcpbridge/mcptest"
	"ollie.dev/ollie/internal/mcpconf"
	"ollie.dev/ollie/internal/testutil"
)

// liveDaemon is `ollie serve -socket S -mount M` with a configured
// memory server (server-memory) in t/mcp.d/servers.json.
type liveDaemon struct {
	cmd  *exec.Cmd
	log  *testutil.LogBuf
	sock string
	mnt  string
	cwd  string
	llm  *llmtest.Server
}

func startLive(t *testing.T, script *llmtest.Script) *liveDaemon {
	t.Helper()
	return startLiveExe(t, script, os.Args[0])
}

// startLiveExe is startLive with the ollie executable exe (this test
// binary, or a real ollie with its ollie-mcp beside it).
func startLiveExe(t *testing.T, script *llmtest.Script, exe string) *liveDaemon {
	t.Helper()
	testutil.RequireFUSE(t)
	memory := mcptest.MemoryCmd(t)
	llm := llmtest.NewTest(t, script)
	home, cwd, sock, env := ollieHome(t)
	cdir := filepath.Join(home, ".config", "ollie")
	cfg, _ := json.Marshal(map[string]any{"sandbox": map[string]any{
		"profiles": map[string]any{"workspace": map[string]any{"extends": "workspace", "read": []string{mcptest.Dir()}}}}})
	os.WriteFile(filepath.Join(cdir, "ollie.json"), cfg, 0o600)
	list, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": "node", "args": memory[1:],
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(cwd, "memory.jsonl")}}}})
	os.MkdirAll(filepath.Join(cdir, "t", "mcp.d"), 0o755)
	os.WriteFile(filepath.Join(cdir, "t", "mcp.d", "servers.json"), list, 0o644)
	d := &liveDaemon{log: &testutil.LogBuf{}, sock: sock, mnt: filepath.Join(t.TempDir(), "mnt"), cwd: cwd, llm: llm}
	d.cmd = exec.Command(exe, "serve", "-socket", sock, "-mount", d.mnt)
	d.cmd.Env = append(env, "OLLAMA_HOST="+llm.URL, "OLLIE_TEST_MAIN=1")
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
		syscall.Unmount(d.mnt, syscall.MNT_DETACH)
		testutil.UnmountUnder(home)
		if t.Failed() {
			t.Logf("ollie serve log:\n%s", d.log)
		}
	})
	testutil.Until(t, "the tree is mounted", func() bool { return strings.Contains(d.log.String(), "mounted on") })
	return d
}

// wantGraphs checks that the model was sent n tool results, each the
// memory server's graph with the entity "ollie" and its observation obs,
// and no error.
func (d *liveDaemon) wantGraphs(t *testing.T, n int, obs string) {
	t.Helper()
	results := toolResults(d.llm.Requests())
	if len(results) != n {
		t.Fatalf("%d tool results, want %d: %q", len(results), n, results)
	}
	for i, r := range results {
		if !strings.Contains(r, `"ollie"`) || !strings.Contains(r, obs) || strings.Contains(r, "error") {
			t.Errorf("call %d: %s", i+1, r)
		}
	}
}

// session makes a session called name whose stages run this test
// binary as ollie, or sets the env of the one there is, and runs one
// prompt to its end.
func (d *liveDaemon) session(t *testing.T, name string, env ...string) {
	t.Helper()
	w := func(p, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(d.mnt, p), []byte(data), 0o644); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
	if len(env) == 0 {
		w("s/new", "cwd="+d.cwd+" name="+name)
		env = []string{"OLLIE_TEST_MAIN=1\n"}
	}
	w("s/"+name+"/env", env[0])
	w("s/"+name+"/prompt", "use the memory server\n")
	b, err := os.ReadFile(filepath.Join(d.mnt, "s", name, "wait"))
	if err != nil || string(b) != "idle\n" {
		t.Fatalf("wait = %q, %v", b, err)
	}
}

// servers are the pids of the MCP proxies the daemon started, by
// session id, from its log.
func (d *liveDaemon) servers() map[string][]int {
	m := map[string][]int{}
	for _, x := range regexp.MustCompile(`mcp: session (\S+): server memory at pid (\d+)`).FindAllStringSubmatch(d.log.String(), -1) {
		m[x[1]] = append(m[x[1]], atoi(x[2]))
	}
	return m
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// running says whether process pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func itoa(n int) string { return strconv.Itoa(n) }

// family is pid and its descendants now.
func family(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		// A child is listed under the thread that forked it.
		tasks, _ := filepath.Glob("/proc/" + itoa(out[i]) + "/task/*/children")
		for _, c := range tasks {
			b, _ := os.ReadFile(c)
			for _, f := range strings.Fields(string(b)) {
				out = append(out, atoi(f))
			}
		}
	}
	return out
}

func steps(stages ...map[string]any) llmtest.Call {
	b, _ := json.Marshal(map[string]any{"steps": stages})
	return llmtest.Call{Name: "execute_code", Args: b}
}

func mcpTool(args ...string) map[string]any { return map[string]any{"tool": "mcp", "args": args} }

// toolResults are the tool results the model was sent, in order.
func toolResults(llm []llmtest.Request) []string {
	var out []string
	for _, r := range llm {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
			out = append(out, r.Messages[n-1].Text)
		}
	}
	return out
}

// TestMCPLiveServerKeepsItsState: three t/mcp calls of a session reach
// one server-memory, started once by the daemon under the session's
// sandbox and kept behind the proxy; another session gets a server of
// its own and cannot reach the first one's; the server ends with its
// session, and the rest with the daemon.
func TestMCPLiveServerKeepsItsState(t *testing.T) {
	t.Parallel()
	attack := `
# Another session's mcp file: neither opened nor written.
if url=$({ printf 'memory\n' >&3 && head -n 1 <&3; } 3<>"$OLLIE/s/alpha/mcp" 2>/dev/null); then echo "WROTE-OTHER $url"; else echo refused-other; fi
if cat "$OLLIE/s/alpha/mcp" 2>/dev/null; then echo READ-OTHER; else echo refused-read; fi
# Its own: a name that is not configured, or a command, starts nothing.
for name in nosuch '/bin/sh -c id' '-- /bin/sh'; do
	if url=$({ printf '%s\n' "$name" >&3 && head -n 1 <&3; } 3<>"$OLLIE_SESSION/mcp" 2>/dev/null); then echo "STARTED $name: $url"; else echo "refused $name"; fi
done`
	script := &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{steps(mcpTool("call", "memory", "create_entities",
			`{"entities": [{"name": "ollie", "entityType": "project", "observations": ["keeps its servers"]}]}`))}},
		{Calls: []llmtest.Call{steps(mcpTool("call", "memory", "open_nodes", `{"names": ["ollie"]}`))}},
		{Calls: []llmtest.Call{steps(mcpTool("call", "memory", "search_nodes", `{"query": "servers"}`))}},
		{Text: "Remembered."},
		{Calls: []llmtest.Call{steps(map[string]any{"language": "sh", "code": attack})}},
		{Calls: []llmtest.Call{steps(mcpTool("call", "memory", "read_graph"))}},
		{Text: "Done."},
		{Calls: []llmtest.Call{steps(mcpTool("call", "memory", "read_graph"))}},
		{Calls: []llmtest.Call{steps(mcpTool("-once", "call", "memory", "read_graph"))}},
		{Text: "Again."},
	}}
	d := startLive(t, script)
	d.session(t, "alpha")
	d.wantGraphs(t, 3, "keeps its servers")
	srv := d.servers()
	if len(srv) != 1 {
		t.Fatalf("servers started: %v, want one for alpha", srv)
	}
	var alphaID string
	var alphaPid int
	for id, pids := range srv {
		if len(pids) != 1 {
			t.Fatalf("session %s: servers %v started, want one for its three calls", id, pids)
		}
		alphaID, alphaPid = id, pids[0]
	}
	procs := family(alphaPid)
	if !running(alphaPid) || len(procs) < 2 {
		t.Fatalf("proxy %d is not running with its server: %v", alphaPid, procs)
	}
	if b, _ := os.ReadFile("/proc/" + itoa(alphaPid) + "/cmdline"); !strings.Contains(string(b), "proxy") {
		t.Errorf("pid %d is %q, not the proxy", alphaPid, b)
	}

	d.session(t, "beta")
	results := toolResults(d.llm.Requests())[3:]
	if len(results) != 2 {
		t.Fatalf("beta: %d tool results, want 2: %q", len(results), results)
	}
	for _, want := range []string{"refused-other", "refused-read", "refused nosuch", "refused /bin/sh -c id", "refused -- /bin/sh"} {
		if !strings.Contains(results[0], want+"\n") {
			t.Errorf("attack: no %q in\n%s", want, results[0])
		}
	}
	for _, bad := range []string{"WROTE-OTHER", "READ-OTHER", "STARTED", "http://"} {
		if strings.Contains(results[0], bad) {
			t.Errorf("attack: %q in\n%s", bad, results[0])
		}
	}
	if !strings.Contains(results[1], `"ollie"`) {
		t.Errorf("beta's call: %s", results[1])
	}
	srv = d.servers()
	if len(srv) != 2 || len(srv[alphaID]) != 1 {
		t.Fatalf("servers started: %v, want one for each session", srv)
	}
	var betaPid int
	for id, pids := range srv {
		if id != alphaID {
			betaPid = pids[0]
		}
	}

	// A change of alpha's environment replaces its server: one never
	// runs under what the session no longer has.
	d.session(t, "alpha", "OLLIE_TEST_MAIN=1\nCHANGED=1\n")
	results = toolResults(d.llm.Requests())[5:]
	if len(results) != 2 || !strings.Contains(results[0], `"ollie"`) || !strings.Contains(results[1], `"ollie"`) {
		t.Errorf("alpha's calls after the change, the second with -once: %q", results)
	}
	srv = d.servers()
	if len(srv[alphaID]) != 2 {
		t.Fatalf("alpha's servers %v, want a second one after its env changed, and none for -once", srv[alphaID])
	}
	testutil.Until(t, "alpha's first server ends", func() bool {
		for _, p := range procs {
			if running(p) {
				return false
			}
		}
		return true
	})
	procs = family(srv[alphaID][1])

	// Removing alpha ends its proxy and the server under it, not beta's.
	if err := os.Remove(filepath.Join(d.mnt, "s", "alpha")); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, "alpha's server ends", func() bool {
		for _, p := range procs {
			if running(p) {
				return false
			}
		}
		return true
	})
	if !running(betaPid) {
		t.Fatalf("beta's server %d ended with alpha", betaPid)
	}
	betaProcs := family(betaPid)

	// Stopping the daemon ends the rest.
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case <-done:
		// (Its exit status is not checked: under -race the race
		// runtime's own exit crashes in these processes, on main too.)
		if strings.Contains(d.log.String(), "DATA RACE") {
			t.Errorf("the daemon had a data race")
		}
	case <-time.After(testutil.HangTimeout):
		t.Fatal("the daemon did not stop")
	}
	testutil.Until(t, "beta's server ends with the daemon", func() bool {
		for _, p := range betaProcs {
			if running(p) {
				return false
			}
		}
		return true
	})
}

// TestMCPLiveBuiltBinaries runs the bridge as users have it: the real
// ollie, and ollie-mcp beside it, a file of its own that the stages'
// sandbox must let them run. The session's server is started by the
// daemon (ollie-mcp proxy, confined as a stage), a -once call runs
// ollie-mcp inside the stage itself, and neither is the ollie binary.
func TestMCPLiveBuiltBinaries(t *testing.T) {
	t.Parallel()
	bin := builtBinaries(t)
	script := &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{steps(mcpTool("call", "memory", "create_entities",
			`{"entities": [{"name": "ollie", "entityType": "project", "observations": ["runs its bridge"]}]}`))}},
		{Calls: []llmtest.Call{steps(mcpTool("-once", "call", "memory", "read_graph"))}},
		{Text: "Done."},
	}}
	d := startLiveExe(t, script, filepath.Join(bin, "ollie"))
	d.session(t, "alpha")
	d.wantGraphs(t, 2, "runs its bridge")
	srv := d.servers()
	if len(srv) != 1 {
		t.Fatalf("servers started: %v, want one", srv)
	}
	for _, pids := range srv {
		exe, err := os.Readlink("/proc/" + itoa(pids[0]) + "/exe")
		if want := filepath.Join(bin, mcpconf.Program); exe != want {
			t.Errorf("the session's server runs %q (%v), want %s", exe, err, want)
		}
	}
}
