package web_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/agent"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/redact"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
	"ollie.dev/ollie/internal/web"
)

func TestMain(m *testing.M) { testutil.SandboxMain(m) }

// env is a user's machine for the page: a real daemon with the real
// agent loop on a real socket, a scripted model, and `ollie web` on a
// loopback port, dialled over 9P like every other client.
type env struct {
	t      *testing.T
	cfg    *config.Config
	llm    *llmtest.Server
	fsys   *client.Fsys // the test's own 9P client
	srv    *web.Server
	origin string // http://127.0.0.1:PORT
	base   string // origin and the secret path, without the final "/"
	url    string // base/ with the token
	cwd    string
	log    *testutil.LogBuf
}

func start(t *testing.T, sc *llmtest.Script) *env {
	return startWith(t, sc, nil)
}

// startWith is start with the daemon's agent loop replaced by r, if not nil.
func startWith(t *testing.T, sc *llmtest.Script, r session.Runner) *env {
	t.Helper()
	e := &env{t: t, llm: llmtest.NewTest(t, sc), log: &testutil.LogBuf{}, cwd: t.TempDir()}
	e.cfg = testutil.Home(t, map[string]string{"OLLAMA_HOST": e.llm.URL})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rd := redact.FromConfig(e.cfg)
	runner, err := agent.FromConfig(e.cfg, exe, "", e.log.Logf, rd)
	if err != nil {
		t.Fatal(err)
	}
	o := daemon.Options{Log: log.New(e.log, "", 0), Runner: runner, Models: runner.Models,
		Redact: rd, BackendState: runner.BackendState, InUse: runner.InUse}
	if r != nil {
		o.Runner = r
	}
	testutil.Daemon(t, e.cfg, o)
	e.fsys = testutil.Dial(t, e.cfg)
	webFsys := testutil.Dial(t, e.cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.srv, err = web.New(web.Options{Fsys: webFsys, Addr: ln.Addr().String(), Logf: e.log.Logf,
		Dial: func(ctx context.Context) (*client.Fsys, error) { return client.Mount(ctx, e.cfg.Socket, "web", "") }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: e.srv}
	go hs.Serve(ln)
	t.Cleanup(func() {
		e.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		if t.Failed() {
			t.Logf("log:\n%s", e.log.String())
		}
	})
	e.origin = "http://" + ln.Addr().String()
	e.url = e.srv.URL()
	e.base, _, _ = strings.Cut(e.url, "/?")
	return e
}

// newSession makes a session through s/new, as a shell would.
func (e *env) newSession(name string) string {
	e.t.Helper()
	ctx := context.Background()
	f, err := e.fsys.Open(ctx, "s/new", plan9.ORDWR)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Clunk(ctx)
	if _, err := f.WriteAt(ctx, []byte("cwd="+e.cwd+"\nname="+name+"\n"), 0); err != nil {
		e.t.Fatal(err)
	}
	b := make([]byte, 100)
	n, err := f.Read(ctx, b, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimSpace(string(b[:n]))
}

func (e *env) read(p string) string {
	e.t.Helper()
	b, err := e.fsys.ReadFile(context.Background(), p)
	if err != nil {
		e.t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

// client is a browser without JavaScript: it opened the URL with the
// token, so it holds the cookie, and it follows no redirect by itself.
func (e *env) client() *http.Client {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("GET with the token: %s", resp.Status)
	}
	u, _ := url.Parse(e.base + "/")
	if len(jar.Cookies(u)) != 1 {
		e.t.Fatalf("no cookie after the token: %v", resp.Header)
	}
	return c
}

func get(t *testing.T, c *http.Client, req *http.Request) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}
