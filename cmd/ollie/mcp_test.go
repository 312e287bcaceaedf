package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/mcpbridge/mcptest"
	"ollie.dev/ollie/internal/mcpconf"
	"ollie.dev/ollie/internal/testutil"
)

// ollie3 runs the test binary as ollie and keeps stdout and stderr apart.
func ollie3(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(env, "OLLIE_TEST_MAIN=1")
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func mcpEnv(t *testing.T) []string {
	return []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
}

func TestMCPCommandStdio(t *testing.T) {
	t.Parallel()
	env := mcpEnv(t)
	server := append([]string{"--"}, mcptest.EverythingCmd(t)...)
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return ollie3(t, env, stdin, append(append([]string{"mcp"}, args...), server...)...)
	}

	out, errOut, code := run("", "-text", "tools")
	if code != 0 {
		t.Fatalf("tools: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"echo: Echoes back the input string; args: message:string\n",
		"get-sum: Returns the sum of two numbers; args: a:number b:number\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools lack %q:\n%s", want, out)
		}
	}
	out, _, _ = run("", "tools")
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tools) < 5 {
		t.Errorf("tools JSON: %v\n%s", err, out)
	}

	if out, errOut, code := run("", "-text", "call", "get-sum", `{"a":40,"b":2}`); code != 0 || out != "The sum of 40 and 2 is 42.\n" {
		t.Errorf("call get-sum: exit %d %q\n%s", code, out, errOut)
	}
	out, _, code = run(`{"message":"from stdin"}`, "call", "echo")
	var res struct {
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Content) != 1 || res.Content[0].Text != "Echo: from stdin" {
		t.Errorf("call echo, args on stdin: exit %d %v\n%s", code, err, out)
	}

	const doc = "demo://resource/static/document/architecture.md"
	if out, _, code := run("", "-text", "resources"); code != 0 || !strings.Contains(out, doc+" architecture.md (text/markdown)") {
		t.Errorf("resources: exit %d\n%s", code, out)
	}
	out, _, code = run("", "read", doc)
	var rd struct {
		Contents []struct{ URI, MIMEType, Text string }
	}
	if err := json.Unmarshal([]byte(out), &rd); code != 0 || err != nil || len(rd.Contents) != 1 ||
		rd.Contents[0].URI != doc || !strings.Contains(rd.Contents[0].Text, "#") {
		t.Errorf("read: exit %d %v\n%s", code, err, out)
	}
	if out, _, code := run("", "-text", "prompts"); code != 0 || !strings.Contains(out, "simple-prompt: ") {
		t.Errorf("prompts: exit %d\n%s", code, out)
	}
}

func TestMCPCommandErrors(t *testing.T) {
	t.Parallel()
	env := mcpEnv(t)
	server := append([]string{"--"}, mcptest.EverythingCmd(t)...)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"call", "get-sum", `{"a":"forty","b":2}`}, 1, "ollie mcp: node: get-sum: MCP error -32602: Input validation error"},
		{[]string{"call", "no-such-tool", `{}`}, 1, "Tool no-such-tool not found"},
		{[]string{"call", "echo", `not json`}, 1, "arguments of echo are not a JSON object"},
		{[]string{"read", "demo://no/such/thing"}, 1, "Resource demo://no/such/thing not found"},
		{[]string{"schema", "nope"}, 1, `no tool "nope" on this server`},
		{[]string{"frobnicate"}, 2, `unknown verb "frobnicate"`},
		{[]string{"call"}, 2, "call wants TOOL [JSON]"},
	} {
		out, errOut, code := ollie3(t, env, "", append(append([]string{"mcp"}, tc.args...), server...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("mcp %s: exit %d, want %d with %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, tc.want, out, errOut)
		}
	}
	_, errOut, code := ollie3(t, env, "", "mcp", "tools", "--", "/nonexistent/server")
	if code != 1 || !strings.Contains(errOut, "cannot connect") {
		t.Errorf("a server that cannot start: exit %d\n%s", code, errOut)
	}
	_, errOut, code = ollie3(t, env, "", "mcp", "-url", "http://127.0.0.1:1/mcp", "tools")
	if code != 1 || !strings.Contains(errOut, "cannot connect") {
		t.Errorf("a url where nothing listens: exit %d\n%s", code, errOut)
	}
}

func TestMCPFilesystemServer(t *testing.T) {
	t.Parallel()
	env := mcpEnv(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("line one\nline two\n"), 0o644)
	server := append([]string{"--"}, mcptest.FilesystemCmd(t, dir)...)
	out, errOut, code := ollie3(t, env, "", append([]string{"mcp", "-text", "tools"}, server...)...)
	if code != 0 || !strings.Contains(out, "read_text_file: Read the complete contents of a file from the file system as text.; args: path:string [head:number] [tail:number]\n") {
		t.Fatalf("tools: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = ollie3(t, env, "", append([]string{"mcp", "-text", "call", "read_text_file", `{"path":"` + dir + `/notes.txt","head":1}`}, server...)...)
	if code != 0 || out != "line one\n" {
		t.Errorf("read_text_file: exit %d %q\n%s", code, out, errOut)
	}
	_, errOut, code = ollie3(t, env, "", append([]string{"mcp", "-text", "call", "read_text_file", `{"path":"/etc/hostname"}`}, server...)...)
	if code != 1 || !strings.Contains(errOut, "read_text_file: Access denied - path outside allowed directories") {
		t.Errorf("read outside the allowed directory: exit %d\n%s", code, errOut)
	}
}

// fixedPort returns a port for a program that cannot be handed a
// listener nor tell the port it bound (server-everything reads PORT; the
// tutorial names its address): a free one below the kernel's ephemeral
// range, so that no listener on :0 of a parallel test can be given it
// meanwhile; only another fixedPort could, one chance in thousands.
// Our own servers listen on :0 and say where (listenedAddr).
func fixedPort(t *testing.T) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	for range 100 {
		port := 10000 + rand.IntN(low-10000)
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

// listenedAddr starts cmd, which logs "on http://ADDR/" once it listens
// (as ollie mcp proxy does), and returns ADDR.
func listenedAddr(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	log := &testutil.LogBuf{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	re := regexp.MustCompile(` on http://([0-9.:]+)/`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(log.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("%s did not say where it listens:\n%s", cmd.Path, log.String())
	return ""
}

// startListening starts cmd and waits until port accepts connections.
func startListening(t *testing.T, cmd *exec.Cmd, port int) {
	t.Helper()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			return
		}
		if i > 300 {
			t.Fatalf("%s did not listen on %d:\n%s", cmd.Path, port, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMCPCommandHTTP(t *testing.T) {
	t.Parallel()
	port := fixedPort(t)
	srv := mcptest.EverythingHTTP(t)
	cmd := exec.Command(srv[0], srv[1:]...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	startListening(t, cmd, port)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	env := mcpEnv(t)
	out, errOut, code := ollie3(t, env, "", "mcp", "-url", url, "-text", "tools")
	if code != 0 || !strings.Contains(out, "get-sum: Returns the sum of two numbers") {
		t.Fatalf("tools over HTTP: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = ollie3(t, env, "", "mcp", "-url", url, "-H", "X-Test: yes", "-text", "call", "echo", `{"message":"over http"}`)
	if code != 0 || out != "Echo: over http\n" {
		t.Errorf("call over HTTP: exit %d %q\n%s", code, out, errOut)
	}
	_, errOut, code = ollie3(t, env, "", "mcp", "-url", url, "call", "get-sum", `{"a":1}`)
	if code != 1 || !strings.Contains(errOut, "expected number, received undefined") {
		t.Errorf("failing call over HTTP: exit %d\n%s", code, errOut)
	}
}

// TestMCPNamedServersAndProxy: the private list holds a server whose env
// names a secret; the proxy runs it with the secret, outside any sandbox,
// and the agents' list reaches it by URL only.
func TestMCPNamedServersAndProxy(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cdir := filepath.Join(home, ".config", "ollie")
	ev := mcptest.EverythingCmd(t)
	private, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": ev[0], "args": ev[1:], "env": map[string]string{"SECRET_TOKEN": "${TOKEN}"},
			"description": "the reference test server"},
	}})
	os.MkdirAll(filepath.Join(cdir, "t", "mcp.d"), 0o700)
	os.WriteFile(filepath.Join(cdir, "mcp.json"), private, 0o600)
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TOKEN=tok-12345"}

	out, _, code := ollie3(t, env, "", "mcp", "servers")
	if code != 0 || !strings.Contains(out, `"SECRET_TOKEN": "..."`) || strings.Contains(out, "tok-12345") || strings.Contains(out, "${TOKEN}") {
		t.Errorf("servers: exit %d\n%s", code, out)
	}
	if out, _, _ := ollie3(t, env, "", "mcp", "-text", "servers"); !strings.HasPrefix(out, "everything: the reference test server (stdio ") {
		t.Errorf("servers -text:\n%s", out)
	}
	_, errOut, code := ollie3(t, env, "", "mcp", "-s", "nothere", "tools")
	if code != 1 || !strings.Contains(errOut, `no server "nothere"`) || !strings.Contains(errOut, "have: everything") {
		t.Errorf("unknown server: exit %d\n%s", code, errOut)
	}

	proxy := exec.Command(os.Args[0], "mcp", "-s", "everything", "-listen", "127.0.0.1:0", "proxy")
	proxy.Env = append(env, "OLLIE_TEST_MAIN=1")
	addr := listenedAddr(t, proxy)

	public := filepath.Join(cdir, "t", "mcp.d", "servers.json")
	os.WriteFile(public, []byte(`{"mcpServers": {"ev": {"url": "http://`+addr+`/"}}}`), 0o644)
	// As t/mcp runs it in a stage: the public list only, no TOKEN.
	agentEnv := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, errOut, code = ollie3(t, agentEnv, "", "mcp", "-servers", public, "-s", "ev", "-text", "call", "echo", `{"message":"via the proxy"}`)
	if code != 0 || out != "Echo: via the proxy\n" {
		t.Fatalf("call through the proxy: exit %d %q\n%s", code, out, errOut)
	}
	_, errOut, code = ollie3(t, agentEnv, "", "mcp", "-servers", public, "-s", "ev", "call", "get-sum", `{"a":"x","b":1}`)
	if code != 1 || !strings.Contains(errOut, "expected number") {
		t.Errorf("failing call through the proxy: exit %d\n%s", code, errOut)
	}
	// The server itself got the secret from ${TOKEN} (server-everything
	// can show its environment).
	out, _, code = ollie3(t, agentEnv, "", "mcp", "-servers", public, "-s", "ev", "-text", "call", "get-env")
	if code != 0 || !strings.Contains(out, "tok-12345") {
		t.Errorf("the proxied server lacks its env: exit %d\n%s", code, out)
	}
	_, errOut, code = ollie3(t, env, "", "mcp", "-s", "everything", "-listen", "0.0.0.0:7999", "proxy")
	if code != 2 || !strings.Contains(errOut, "only loopback") {
		t.Errorf("proxy on a public address: exit %d\n%s", code, errOut)
	}
}

// The -- form gives the server the caller's environment less its secrets,
// and -e adds to it (server-memory reads MEMORY_FILE_PATH so).
func TestMCPCommandEnv(t *testing.T) {
	t.Parallel()
	ev := mcptest.EverythingCmd(t)
	env := append(mcpEnv(t), "FROM_CALLER=here", "SOME_API_KEY=sk-should-not-pass-1234567890")
	args := append([]string{"mcp", "-text", "-e", "MEMORY_FILE_PATH=/x/m.json", "call", "get-env", "--"}, ev...)
	out, errOut, code := ollie3(t, env, "", args...)
	if code != 0 {
		t.Fatalf("get-env: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"FROM_CALLER", "here", "MEMORY_FILE_PATH", "/x/m.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("the server's environment lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-should-not-pass") || strings.Contains(out, "SOME_API_KEY") {
		t.Errorf("a secret reached the server:\n%s", out)
	}
	if _, errOut, code := ollie3(t, mcpEnv(t), "", append([]string{"mcp", "-e", "novalue", "tools", "--"}, ev...)...); code != 2 || !strings.Contains(errOut, "want KEY=VALUE") {
		t.Errorf("-e novalue: exit %d %s", code, errOut)
	}
}

// TestOllieLinksNoSDK: the daemon and every verb start without the
// package initialisation of the SDKs ollie does not run in them. The
// provider SDKs are the tests' oracle only (internal/backend/call.go);
// the MCP SDK is ollie-mcp's.
func TestOllieLinksNoSDK(t *testing.T) {
	t.Parallel()
	bi, err := buildinfo.ReadFile(filepath.Join(builtBinaries(t), "ollie"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range bi.Deps {
		switch m.Path {
		case "github.com/openai/openai-go/v3", "github.com/anthropics/anthropic-sdk-go/v2", "github.com/modelcontextprotocol/go-sdk":
			t.Errorf("ollie links %s %s", m.Path, m.Version)
		}
	}
}

// TestMCPIsItsOwnProgram: the MCP SDK is linked into ollie-mcp only,
// never into ollie (the daemon and every verb would pay for its
// initialisation); `ollie mcp` becomes ollie-mcp, its flags and all,
// and says how to build it when it is missing.
func TestMCPIsItsOwnProgram(t *testing.T) {
	t.Parallel()
	bin := builtBinaries(t)
	const sdk = "github.com/modelcontextprotocol/go-sdk"
	for _, c := range []struct {
		name string
		want bool
	}{{"ollie", false}, {mcpconf.Program, true}} {
		bi, err := buildinfo.ReadFile(filepath.Join(bin, c.name))
		if err != nil {
			t.Fatal(err)
		}
		has := slices.ContainsFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == sdk })
		if has != c.want {
			t.Errorf("%s links %s: %v, want %v", c.name, sdk, has, c.want)
		}
	}

	env := mcpEnv(t)
	run := func(exe string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(exe, args...)
		cmd.Env = env
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return o.String(), e.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), 0
	}
	ollie := filepath.Join(bin, "ollie")
	if out, _, code := run(ollie, "help", "mcp"); code != 0 || !strings.Contains(out, "-servers FILE") || !strings.Contains(out, "ollie-mcp") {
		t.Errorf("ollie help mcp: exit %d\n%s", code, out)
	}
	if _, errOut, code := run(ollie, "mcp", "-h"); code != 0 || !strings.HasPrefix(errOut, "usage: ollie mcp ") || !strings.Contains(errOut, "-private") {
		t.Errorf("ollie mcp -h: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := run(ollie, "mcp", "-bogus", "tools"); code != 2 || !strings.Contains(errOut, "flag provided but not defined: -bogus") {
		t.Errorf("ollie mcp -bogus: exit %d\n%s", code, errOut)
	}
	cfg := filepath.Join(t.TempDir(), "other.json")
	os.WriteFile(cfg, []byte(`{"bogus": 1}`), 0o600)
	if _, errOut, code := run(ollie, "-config", cfg, "mcp", "servers"); code != 1 || !strings.Contains(errOut, "bogus") {
		t.Errorf("ollie -config BAD mcp servers: exit %d\n%s", code, errOut)
	}
	server := mcptest.EverythingCmd(t)
	out, errOut, code := run(ollie, append([]string{"mcp", "-text", "call", "echo", `{"message":"hi"}`, "--"}, server...)...)
	if code != 0 || out != "Echo: hi\n" {
		t.Errorf("ollie mcp call echo: exit %d %q\n%s", code, out, errOut)
	}

	alone := filepath.Join(t.TempDir(), "ollie")
	if err := copyFile(ollie, alone); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(alone, "mcp", "servers"); code != 1 ||
		!strings.Contains(errOut, "ollie-mcp is not installed beside "+alone) || !strings.Contains(errOut, "go build -o") {
		t.Errorf("ollie mcp without ollie-mcp: exit %d\n%s", code, errOut)
	}
}

// copyFile copies the executable src to dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
