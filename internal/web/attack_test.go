package web_test

// Attacks on ollie web from outside the page: a client without the
// token, a DNS-rebound name, another site's requests (CSRF), paths that
// try to leave m/ sk/ t/ a/, and oversized requests. Each test fails
// while its attack works; the tree is checked over 9P afterwards, since
// a refused request must change nothing.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// elevScript asks for consent on "elev WORD", with a stage that would
// create WORD.txt.
var elevScript = &llmtest.Script{
	Rules: []llmtest.Rule{
		{If: `^elev (\w+)`, Then: llmtest.Turn{Text: "Needs consent.", Calls: []llmtest.Call{{Name: "execute_code",
			Args: json.RawMessage(`{"steps":[{"code":"echo {{1}} > {{1}}.txt","language":"bash","elevated":true}]}`)}}}},
	},
	Default: &llmtest.Turn{Text: "done"},
}

// asking writes a prompt over 9P and waits for its consent request.
func (e *env) asking(id, word string) string {
	e.t.Helper()
	e.write("s/"+id+"/prompt", "elev "+word)
	var n string
	testutil.Until(e.t, "the consent request", func() bool {
		ents, err := e.fsys.ReadDir(context.Background(), "s/"+id+"/ask")
		if err != nil || len(ents) == 0 {
			return false
		}
		n = ents[0].Name
		return true
	})
	return n
}

func (e *env) write(p, text string) {
	e.t.Helper()
	ctx := context.Background()
	f, err := e.fsys.Open(ctx, p, plan9.OWRITE|plan9.OTRUNC)
	if err != nil && strings.HasPrefix(p, "m/") {
		f, err = e.fsys.Create(ctx, p, 0644, plan9.OWRITE)
	}
	if err != nil {
		e.t.Fatalf("open %s: %v", p, err)
	}
	if _, err := f.WriteAt(ctx, []byte(text), 0); err != nil {
		f.Clunk(ctx)
		e.t.Fatalf("write %s: %v", p, err)
	}
	if err := f.Clunk(ctx); err != nil {
		e.t.Fatalf("write %s: %v", p, err)
	}
}

// routes is every route of the server, with a request for each.
func routes(id, n string) [][2]string {
	return [][2]string{
		{"GET", "/"}, {"GET", "/s/" + id}, {"GET", "/s/" + id + "/context"}, {"GET", "/s/" + id + "/cfg"},
		{"GET", "/files"}, {"GET", "/edit?p=m/secret"}, {"GET", "/edit?new=m"}, {"GET", "/search?q=secretword"},
		{"GET", "/events/list"}, {"GET", "/events/s/" + id}, {"GET", "/assets/app.js"}, {"GET", "/assets/style.css"},
		{"GET", "/assets/icon.svg"}, {"GET", "/assets/index.html"}, {"HEAD", "/"}, {"GET", "/nothing"},
		{"POST", "/api/new"}, {"POST", "/api/s/" + id + "/prompt"}, {"POST", "/api/s/" + id + "/queue"},
		{"POST", "/api/s/" + id + "/stop"}, {"POST", "/api/s/" + id + "/compact"}, {"POST", "/api/s/" + id + "/resume"},
		{"POST", "/api/s/" + id + "/rename"}, {"POST", "/api/s/" + id + "/end"}, {"POST", "/api/ask/" + id + "/" + n},
		{"POST", "/api/put"}, {"OPTIONS", "/api/put"}, {"PUT", "/api/put"},
	}
}

// bodyFor is a request body each POST route would act on.
func bodyFor(route, cwd string) string {
	switch {
	case strings.HasSuffix(route, "/api/new"):
		return `{"Cwd":` + strconvQuote(cwd) + `,"Name":"made-by-attacker"}`
	case strings.Contains(route, "/api/ask/"):
		return `{"Text":"allow"}`
	case strings.HasSuffix(route, "/api/put"):
		return `{"Path":"m/pwned","Text":"attacker","Create":true}`
	case strings.HasSuffix(route, "/rename"):
		return `{"Text":"renamed-by-attacker"}`
	}
	return `{"Text":"attacker prompt"}`
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// untouched fails the test if any attack of the tests below changed the
// tree: the session is there under its own name, asking still, with no
// prompt of the attacker's, and m/pwned and made-by-attacker do not exist.
func (e *env) untouched(id, name, n, word string) {
	e.t.Helper()
	idx := e.read("s/idx")
	if !strings.Contains(idx, id+"\t") || strings.Contains(idx, "made-by-attacker") || strings.Contains(idx, "renamed-by-attacker") {
		e.t.Errorf("s/idx after the attacks:\n%s", idx)
	}
	if cfg := e.read("s/" + id + "/cfg"); !strings.Contains(cfg, "name="+name) {
		e.t.Errorf("the session's name changed:\n%s", cfg)
	}
	if strings.Contains(e.read("s/"+id+"/chat"), "attacker prompt") || strings.Contains(e.read("s/"+id+"/queue"), "attacker") {
		e.t.Errorf("an attacker's prompt reached the session")
	}
	if _, err := e.fsys.Stat(context.Background(), "m/pwned"); err == nil {
		e.t.Errorf("m/pwned was made")
	}
	if n != "" {
		if _, err := e.fsys.Stat(context.Background(), "s/"+id+"/ask/"+n); err != nil {
			e.t.Errorf("the consent request was answered: %v", err)
		}
		if st := strings.TrimSpace(e.read("s/" + id + "/state")); st != "asking" {
			e.t.Errorf("state %q, want still asking", st)
		}
	}
	if _, err := e.fsys.Stat(context.Background(), "s/"+id+"/chat"); err != nil {
		e.t.Errorf("the session was ended: %v", err)
	}
}

func TestAttackNoTokenEveryRoute(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("secretname")
	n := e.asking(id, "notoken")
	e.write("m/secret", "secretword in a note")
	tok := tokenOf(e)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, cookie := range []string{"", "ollie_web_1=" + tok, cookieName(e) + "=" + tok[:len(tok)-1], cookieName(e) + "=" + tok + "x",
		cookieName(e) + "=", cookieName(e) + "=" + strings.ToUpper(tok)} {
		for _, r := range routes(id, n) {
			req, _ := http.NewRequest(r[0], e.base+r[1], strings.NewReader(bodyFor(r[1], e.cwd)))
			req.Header.Set("Origin", e.origin)
			req.Header.Set("Content-Type", "application/json")
			if cookie != "" {
				req.Header.Set("Cookie", cookie)
			}
			code, body, h := get(t, plain, req)
			if code != http.StatusUnauthorized {
				t.Errorf("%s %s with cookie %q: %d, want 401", r[0], r[1], cookie, code)
			}
			for _, secret := range []string{id, "secretname", "secretword", "<", "function", "{"} {
				if strings.Contains(body, secret) {
					t.Errorf("%s %s with cookie %q says %q", r[0], r[1], cookie, body)
				}
			}
			if h.Get("Set-Cookie") != "" || h.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("%s %s: headers %v", r[0], r[1], h)
			}
		}
		// The WebSocket handshake of the page's streams.
		for _, p := range []string{"/events/list", "/events/s/" + id} {
			code, body := wsHandshake(t, e, p, e.origin, cookie)
			if code != http.StatusUnauthorized || strings.Contains(body, id) {
				t.Errorf("WebSocket %s with cookie %q: %d %q", p, cookie, code, body)
			}
		}
	}
	// The token in the query is taken by GET only, and gives a cookie and
	// a redirect, never a page; not on a POST, not in a header.
	for _, r := range routes(id, n) {
		if r[0] != "POST" {
			continue
		}
		req, _ := http.NewRequest("POST", e.base+r[1]+"?token="+url.QueryEscape(tok), strings.NewReader(bodyFor(r[1], e.cwd)))
		req.Header.Set("Origin", e.origin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-Ollie-Token", tok)
		if code, _, _ := get(t, plain, req); code != http.StatusUnauthorized {
			t.Errorf("POST %s with the token in the query: %d, want 401", r[1], code)
		}
	}
	e.untouched(id, "secretname", n, "notoken")
	e.write("s/"+id+"/ask/"+n, "deny\n")
}

func cookieName(e *env) string {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.origin, "http://"))
	return "ollie_web_" + port
}

// wsHandshake asks for a WebSocket at p and returns the status and body.
func wsHandshake(t *testing.T, e *env, p, origin, cookie string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.base+p, nil)
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="} {
		req.Header.Set(k, v)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, ""
	}
	b := make([]byte, 4096)
	k, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:k])
}

func TestAttackTokenNeverShown(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("tok")
	tok := tokenOf(e)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The redirect that sets the cookie: no token in its Location or its
	// body, no Referer for the page it goes to.
	for _, p := range []string{"/?token=", "/s/" + id + "?token=", "/search?q=x&token="} {
		req, _ := http.NewRequest("GET", e.base+p+url.QueryEscape(tok), nil)
		code, body, h := get(t, plain, req)
		if code != http.StatusSeeOther || strings.Contains(h.Get("Location"), tok) || strings.Contains(body, tok) {
			t.Errorf("GET %s…: %d Location %q body %q", p, code, h.Get("Location"), body)
		}
		if h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s…: Referrer-Policy %q", p, h.Get("Referrer-Policy"))
		}
		c := h.Get("Set-Cookie")
		for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=" + strings.TrimPrefix(e.base, e.origin) + "/;"} {
			if !strings.Contains(c, want) {
				t.Errorf("Set-Cookie %q lacks %s", c, want)
			}
		}
		if strings.Contains(c, "Secure") || strings.Contains(c, "Domain=") {
			t.Errorf("Set-Cookie %q: Secure is never sent back over http, Domain widens it", c)
		}
	}
	// No page, stream or error has the token in it, and the log neither.
	c := e.client()
	for _, r := range routes(id, "1") {
		if r[0] != "GET" {
			continue
		}
		req, _ := http.NewRequest("GET", e.base+r[1], nil)
		if strings.HasPrefix(r[1], "/events/") {
			ctx, cancel := context.WithCancel(context.Background())
			req = req.WithContext(ctx)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			cancel()
			resp.Body.Close()
			if strings.Contains(line, tok) {
				t.Errorf("GET %s says the token", r[1])
			}
			continue
		}
		_, body, h := get(t, c, req)
		if strings.Contains(body, tok) || strings.Contains(fmt.Sprint(h), tok) {
			t.Errorf("GET %s says the token", r[1])
		}
	}
	if strings.Contains(e.log.String(), tok) {
		t.Errorf("the token is in the log")
	}
}

func TestAttackRebindingEveryRoute(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("rebind")
	n := e.asking(id, "rebind")
	c := e.client()
	csrf := csrfOf(t, e, c)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.origin, "http://"))
	for _, host := range []string{"evil.example:" + port, "evil.example", "localhost.:" + port, "127.0.0.2:" + port,
		"0.0.0.0:" + port, "127.1:" + port, "2130706433:" + port, "[::ffff:127.0.0.1]:" + port, "LOCALHOST:" + port} {
		for _, r := range routes(id, n) {
			req, _ := http.NewRequest(r[0], e.base+r[1], strings.NewReader(bodyFor(r[1], e.cwd)))
			req.Host = host
			req.Header.Set("Origin", "http://"+host)
			req.Header.Set("X-Ollie-CSRF", csrf)
			req.Header.Set("Content-Type", "application/json")
			code, body, _ := get(t, c, req)
			if code != http.StatusMisdirectedRequest {
				t.Errorf("%s %s with Host %q: %d, want 421", r[0], r[1], host, code)
			}
			if strings.Contains(body, id) || strings.Contains(body, "rebind") || strings.Contains(body, csrf) {
				t.Errorf("%s %s with Host %q says %q", r[0], r[1], host, body)
			}
		}
	}
	// A request line in absolute form names its host there.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.origin, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET http://evil.example:%s/ HTTP/1.1\r\nHost: %s\r\nCookie: %s=%s\r\nConnection: close\r\n\r\n",
		port, strings.TrimPrefix(e.origin, "http://"), cookieName(e), tokenOf(e))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("absolute-form request for evil.example: %s", resp.Status)
	}
	e.untouched(id, "rebind", n, "rebind")
	e.write("s/"+id+"/ask/"+n, "deny\n")
}

func TestAttackCSRFEveryChange(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("victim")
	n := e.asking(id, "csrf")
	c := e.client()
	csrf := csrfOf(t, e, c)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.origin, "http://"))
	type attack struct {
		name, method, origin, token, ctype, site string
	}
	attacks := []attack{
		{"foreign Origin", "POST", "http://evil.example", csrf, "application/json", ""},
		{"another port of this host", "POST", "http://127.0.0.1:1", csrf, "application/json", "same-site"},
		{"localhost for 127.0.0.1", "POST", "http://localhost:" + port, csrf, "application/json", "same-site"},
		{"https Origin", "POST", "https://" + strings.TrimPrefix(e.origin, "http://"), csrf, "application/json", ""},
		{"Origin null", "POST", "null", csrf, "application/json", ""},
		{"no Origin", "POST", "", csrf, "application/json", ""},
		{"no CSRF token", "POST", e.origin, "", "application/json", ""},
		{"wrong CSRF token", "POST", e.origin, csrf + "x", "application/json", ""},
		{"the cookie's token as CSRF", "POST", e.origin, tokenOf(e), "application/json", ""},
		{"cross-site fetch", "POST", e.origin, csrf, "application/json", "cross-site"},
		{"text/plain form", "POST", e.origin, csrf, "text/plain", ""},
		{"urlencoded form", "POST", e.origin, csrf, "application/x-www-form-urlencoded", ""},
		{"multipart form", "POST", e.origin, csrf, "multipart/form-data; boundary=x", ""},
		{"no content type", "POST", e.origin, csrf, "", ""},
		{"GET", "GET", e.origin, csrf, "application/json", ""},
		{"HEAD", "HEAD", e.origin, csrf, "application/json", ""},
		{"PUT", "PUT", e.origin, csrf, "application/json", ""},
		{"DELETE", "DELETE", e.origin, csrf, "application/json", ""},
	}
	for _, a := range attacks {
		for _, r := range routes(id, n) {
			if r[0] != "POST" {
				continue
			}
			b := bodyFor(r[1], e.cwd)
			u := e.base + r[1]
			if a.method == "GET" || a.method == "HEAD" {
				u += "?" + url.Values{"Text": {"allow"}, "Path": {"m/pwned"}, "Create": {"true"}, "Cwd": {e.cwd}}.Encode()
			}
			req, _ := http.NewRequest(a.method, u, strings.NewReader(b))
			if a.origin != "" {
				req.Header.Set("Origin", a.origin)
			}
			if a.token != "" {
				req.Header.Set("X-Ollie-CSRF", a.token)
			}
			if a.ctype != "" {
				req.Header.Set("Content-Type", a.ctype)
			}
			if a.site != "" {
				req.Header.Set("Sec-Fetch-Site", a.site)
			}
			if code, body, _ := get(t, c, req); code < 400 {
				t.Errorf("%s to %s %s: %d %q, want it refused", a.name, a.method, r[1], code, body)
			}
		}
	}
	// A page of another site, or of another port here, opening the streams.
	for _, origin := range []string{"http://evil.example", "http://127.0.0.1:1", "null", ""} {
		for _, p := range []string{"/events/list", "/events/s/" + id} {
			if code, _ := wsHandshake(t, e, p, origin, cookieName(e)+"="+tokenOf(e)); code != http.StatusForbidden {
				t.Errorf("WebSocket %s from %q: %d, want 403", p, origin, code)
			}
		}
	}
	e.untouched(id, "victim", n, "csrf")
	// The page's own request still works (so the refusals above are not
	// the server refusing everything).
	req, _ := http.NewRequest("POST", e.base+"/api/ask/"+id+"/"+n, strings.NewReader(`{"Text":"deny"}`))
	req.Header.Set("Origin", e.origin)
	req.Header.Set("X-Ollie-CSRF", csrf)
	req.Header.Set("Content-Type", "application/json")
	if code, body, _ := get(t, c, req); code != http.StatusOK {
		t.Fatalf("the page's own deny: %d %s", code, body)
	}
}

// send is the page's own POST: the cookie, Origin and CSRF header.
func (e *env) send(c *http.Client, csrf, p, body string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.base+p, strings.NewReader(body))
	req.Header.Set("Origin", e.origin)
	req.Header.Set("X-Ollie-CSRF", csrf)
	req.Header.Set("Content-Type", "application/json")
	code, b, _ := get(e.t, c, req)
	return code, b
}

func TestAttackPathTraversal(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("paths")
	other := e.newSession("other")
	c := e.client()
	csrf := csrfOf(t, e, c)
	e.write("m/keep", "kept")
	before := map[string]string{}
	for _, p := range []string{"a/default.json", "m/keep", "s/" + other + "/cfg", "s/idx"} {
		before[p] = e.read(p)
	}
	bad := []string{"s/" + other + "/prompt", "s/" + other + "/ctl", "s/" + id + "/ask/1", "ctl", "/m/x", "m//x", "./m/x",
		"m/./x", "m/../a/default.json", "m/..", "m/.", "m/", "m", "..", "../m/x", "m/x/../../s/" + other + "/ctl",
		"m/%2e%2e", "m/%2e%2e/ctl", "m%2fx", "m\\..\\ctl", "m/x\x00", "m/\x00", "m/x\n", "m/ x", "m/idx", "sk/idx", "t/idx",
		"a/idx", "tr/x", "p/x", "x/m/y", "M/x", "m/" + strings.Repeat("a", 300) + "/b", "m/x/y", "\u2025/m", "m/\u2215x"}
	for _, p := range bad {
		code, b := e.send(c, csrf, "/api/put", `{"Path":`+strconvQuote(p)+`,"Text":"pwned","Create":true}`)
		if code == http.StatusOK {
			t.Errorf("put %q: %d %s", p, code, b)
		}
		req, _ := http.NewRequest("GET", e.base+"/edit?p="+url.QueryEscape(p), nil)
		if code, body, _ := get(t, c, req); code == http.StatusOK || strings.Contains(body, "default_agent") {
			t.Errorf("edit %q: %d", p, code)
		}
	}
	// Raw paths the router sees before any cleaning.
	for _, raw := range []string{"/edit?p=m/%2e%2e/a/default.json", "/edit?p=m%2F..%2Fctl", "/edit?p=%00", "/edit?p=m/x%00",
		"/s/" + id + "/ctl", "/s/" + id + "/prompt", "/s/" + id + "/ask", "/s/" + id + "/..%2f..%2fa%2fdefault.json",
		"/s/" + id + "/%2e%2e", "/s/..%2f" + other + "/cfg", "/s/%2e%2e/idx", "/s/" + id + "%00/cfg", "/assets/../handlers.go",
		"/assets/%2e%2e/server.go", "/assets/index.html", "/assets/layout.html", "/assets/", "/assets", "/events/s/..%2fidx",
		"/events/s/%2e%2e", "/edit?new=..", "/edit?new=s", "/edit?new=/m"} {
		req, _ := http.NewRequest("GET", e.base+raw, nil)
		code, body, _ := get(t, c, req)
		if code == http.StatusOK || strings.Contains(body, "package web") || strings.Contains(body, "{{") {
			t.Errorf("GET %s: %d %.200q", raw, code, body)
		}
	}
	for _, p := range []string{"/api/s/..%2F" + other + "/prompt", "/api/s/%2E%2E/prompt", "/api/s/" + other + "%2Fask%2F1/prompt",
		"/api/ask/" + id + "/..%2F..%2F" + other + "%2Fctl", "/api/ask/" + id + "/1%00", "/api/ask/" + id + "/-1",
		"/api/ask/" + id + "/1e3", "/api/s/new/prompt", "/api/s/idx/prompt"} {
		code, b := e.send(c, csrf, p, `{"Text":"allow"}`)
		if code == http.StatusOK {
			t.Errorf("POST %s: %d %s", p, code, b)
		}
	}
	for p, was := range before {
		if now := e.read(p); now != was && p != "s/idx" {
			t.Errorf("%s changed:\n%s\nwas:\n%s", p, now, was)
		}
	}
	if strings.Contains(e.read("s/"+other+"/chat"), "pwned") || strings.Contains(e.read("s/"+other+"/chat"), "allow") {
		t.Errorf("a prompt reached the other session")
	}
	// The editor's own files still work.
	if code, b := e.send(c, csrf, "/api/put", `{"Path":"m/keep","Text":"edited"}`); code != http.StatusOK || e.read("m/keep") != "edited" {
		t.Errorf("put m/keep: %d %s", code, b)
	}
}

func TestAttackHugeBodies(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("huge")
	c := e.client()
	csrf := csrfOf(t, e, c)
	e.write("m/keep", "kept")
	big := strings.Repeat("A", 8<<20)
	for _, p := range []string{"/api/put", "/api/s/" + id + "/prompt", "/api/new"} {
		req, _ := http.NewRequest("POST", e.base+p, strings.NewReader(`{"Path":"m/keep","Text":"`+big+`","Cwd":"`+big+`"}`))
		req.Header.Set("Origin", e.origin)
		req.Header.Set("X-Ollie-CSRF", csrf)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req) // an error is the server hanging up on the rest of the body
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Errorf("8 MiB to %s: %s", p, resp.Status)
			}
		}
	}
	if e.read("m/keep") != "kept" {
		t.Errorf("m/keep changed")
	}
	if strings.Contains(e.read("s/"+id+"/chat"), "AAAA") {
		t.Errorf("an 8 MiB prompt reached the session")
	}
	// A header section of megabytes is refused by net/http, not kept.
	req, _ := http.NewRequest("GET", e.base+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("B", 2<<20))
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("2 MiB of headers: %s", resp.Status)
		}
	}
}

// A search is a literal string, not a pattern: a regular expression that
// would take exponential time is looked for as text.
func TestAttackSearchIsLiteral(t *testing.T) {
	e := start(t, &llmtest.Script{Default: &llmtest.Turn{Text: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! and (a+)+$ literally"}})
	id := e.newSession("search")
	e.write("s/"+id+"/prompt", "go")
	testutil.Until(t, "the reply", func() bool { return strings.Contains(e.read("s/"+id+"/chat"), "literally") })
	c := e.client()
	// The list learns of a session made over 9P at its next read of s/idx.
	testutil.Until(t, "the session in the search", func() bool {
		req, _ := http.NewRequest("GET", e.base+"/search?q=literally", nil)
		_, body, _ := get(t, c, req)
		return strings.Contains(body, "literally</pre>")
	})
	for q, want := range map[string]bool{"(a+)+$": true, "(a|aa)*b": false, "a{1000}{1000}": false, ".*": false} {
		req, _ := http.NewRequest("GET", e.base+"/search?q="+url.QueryEscape(q), nil)
		code, body, _ := get(t, c, req)
		if hit := strings.Contains(body, "literally</pre>"); code != http.StatusOK || hit != want {
			t.Errorf("search %q: %d, a hit %v, want %v:\n%s", q, code, hit, want, body)
		}
	}
}

// TestAttackCSPEveryResponse parses the policy of every page, stream and
// error: script only from this server's files, no inline script, no
// plugin, no <base>, no framing, forms only here.
func TestAttackCSPEveryResponse(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("csp")
	c := e.client()
	for _, r := range routes(id, "1") {
		if r[0] != "GET" || strings.HasPrefix(r[1], "/events/") {
			continue
		}
		req, _ := http.NewRequest("GET", e.base+r[1], nil)
		_, _, h := get(t, c, req)
		csp := map[string][]string{}
		for _, d := range strings.Split(h.Get("Content-Security-Policy"), ";") {
			if f := strings.Fields(d); len(f) > 0 {
				csp[f[0]] = f[1:]
			}
		}
		effective := func(name string) []string {
			if v, ok := csp[name]; ok {
				return v
			}
			if strings.HasPrefix(name, "script-src-") {
				if v, ok := csp["script-src"]; ok {
					return v
				}
			}
			if name == "base-uri" || name == "frame-ancestors" || name == "form-action" {
				return nil // no fallback: unset is anything
			}
			return csp["default-src"]
		}
		is := func(name string, allowed ...string) {
			v := effective(name)
			if len(v) == 0 {
				t.Errorf("GET %s: CSP %q: %s unset", r[1], h.Get("Content-Security-Policy"), name)
			}
			for _, s := range v {
				if !slices.Contains(allowed, s) {
					t.Errorf("GET %s: CSP %s allows %s", r[1], name, s)
				}
			}
		}
		is("default-src", "'none'", "'self'")
		is("script-src", "'self'")
		is("script-src-elem", "'self'")
		is("script-src-attr", "'none'", "'self'")
		is("object-src", "'none'")
		is("base-uri", "'none'")
		is("frame-ancestors", "'none'")
		is("form-action", "'self'", "'none'")
		is("frame-src", "'none'")
		is("img-src", "'self'", "'none'")
		is("style-src", "'self'")
		is("connect-src", "'self'", "ws://"+strings.TrimPrefix(e.origin, "http://"))
	}
}

// TestAttackManyStreams: a client holding the cookie opens streams until
// something gives; the page must go on answering the others (a stream
// that cannot be served is refused, not queued behind the rest).
func TestAttackManyStreams(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("streams")
	c := e.client()
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 2000}
	sc := &http.Client{Jar: c.Jar, Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := 0
	for range 1200 {
		req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/events/s/"+id, nil)
		resp, err := sc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			opened++
			go io.Copy(io.Discard, resp.Body)
		} else {
			resp.Body.Close()
		}
	}
	t.Logf("%d of 1200 streams opened", opened)
	done := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("GET", e.base+"/s/"+id+"/cfg", nil)
		resp, err := c.Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		resp.Body.Close()
		done <- resp.Status
	}()
	select {
	case s := <-done:
		if !strings.HasPrefix(s, "200") {
			t.Errorf("a page with the streams open: %s", s)
		}
	case <-time.After(testutil.HangTimeout):
		t.Fatalf("a page hangs with %d streams open", opened)
	}
}

// TestAttackShadowCookie: a page on another port of this host may set a
// cookie of the same name for a longer path (cookies ignore ports); the
// browser sends it first. The real one, sent after it, still counts.
func TestAttackShadowCookie(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("shadow")
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", e.base+"/s/"+id, nil)
	req.Header.Set("Cookie", cookieName(e)+"=planted; "+cookieName(e)+"="+tokenOf(e))
	if code, _, _ := get(t, plain, req); code != http.StatusOK {
		t.Errorf("the token after a planted cookie of its name: %d, want 200", code)
	}
	req, _ = http.NewRequest("GET", e.base+"/s/"+id, nil)
	req.Header.Set("Cookie", cookieName(e)+"=planted; "+cookieName(e)+"=other")
	if code, _, _ := get(t, plain, req); code != http.StatusUnauthorized {
		t.Errorf("two wrong cookies: %d, want 401", code)
	}
}

// TestAttackFieldInjection: the fields of a form are one value each; a
// value that carries another key or command (s/new and ctl split on
// blanks and lines) is refused or stays one value.
func TestAttackFieldInjection(t *testing.T) {
	e := start(t, elevScript)
	id := e.newSession("fields")
	c := e.client()
	csrf := csrfOf(t, e, c)
	for _, name := range []string{"x stop", "x\tend", "x\u2028stop", "x\u0085stop", "x\vstop", "x\fstop", "x\x00", "x\nstop", "x\rstop"} {
		code, b := e.send(c, csrf, "/api/s/"+id+"/rename", `{"Text":`+strconvQuote(name)+`}`)
		if code == http.StatusOK {
			t.Errorf("rename to %q: %d %s", name, code, b)
		}
	}
	for _, v := range []string{"x agent=evil", "x\tmodel=evil", "x\vbackend=evil", "x\x00model=evil"} {
		code, b := e.send(c, csrf, "/api/new", `{"Cwd":`+strconvQuote(e.cwd)+`,"Name":`+strconvQuote(v)+`}`)
		if code == http.StatusOK {
			t.Errorf("new with name %q: %d %s", v, code, b)
		}
	}
	if cfg := e.read("s/" + id + "/cfg"); !strings.Contains(cfg, "name=fields") {
		t.Errorf("cfg after the attempts:\n%s", cfg)
	}
	if idx := e.read("s/idx"); strings.Contains(idx, "evil") || strings.Count(idx, "\n") != 1 {
		t.Errorf("s/idx after the attempts:\n%s", idx)
	}
}

// TestAttackOutsideThePath: the page lives under a secret path only.
// Every other path answers 404 with nothing in it, not a hint of the
// path, whatever cookie or token the request carries, and a token in
// the query there makes no cookie.
func TestAttackOutsideThePath(t *testing.T) {
	e := start(t, &llmtest.Script{})
	id := e.newSession("outside")
	c := e.client()
	secret := strings.TrimPrefix(e.base, e.origin+"/")
	tok := url.QueryEscape(tokenOf(e))
	for _, p := range []string{"/", "/?token=" + tok, "/s/" + id, "/assets/app.js", "/events/list", "/search?q=outside",
		"/" + secret[:len(secret)-1] + "/", "/" + secret + "x/", "/" + secret + "x/?token=" + tok, "/" + strings.ToUpper(secret) + "/",
		"/x/" + secret + "/", "//" + secret + "/", "/%2F" + secret + "/"} {
		for _, m := range []string{"GET", "POST"} {
			req, _ := http.NewRequest(m, e.origin+p, strings.NewReader(`{"Text":"hi"}`))
			req.Header.Set("Origin", e.origin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Cookie", cookieName(e)+"="+tokenOf(e))
			code, body, h := get(t, c, req)
			if code != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404", m, p, code)
			}
			for k, v := range h {
				if strings.Contains(strings.Join(v, " "), secret) || strings.Contains(strings.Join(v, " "), tokenOf(e)) {
					t.Errorf("%s %s: header %s: %q", m, p, k, v)
				}
			}
			if h.Get("Set-Cookie") != "" || strings.Contains(body, secret) || strings.Contains(body, id) || strings.Contains(body, "outside") {
				t.Errorf("%s %s: Set-Cookie %q, body %q", m, p, h.Get("Set-Cookie"), body)
			}
		}
	}
	// The secret path without its final "/" leads to it (and the cookie).
	req, _ := http.NewRequest("GET", e.base+"?token="+tok, nil)
	code, _, h := get(t, c, req)
	if code != http.StatusSeeOther || h.Get("Location") != strings.TrimPrefix(e.url, e.origin) {
		t.Errorf("GET the path without its \"/\": %d, Location %q", code, h.Get("Location"))
	}
	// The mux's own redirects inside the path keep it.
	for _, p := range []string{"/assets", "/s/" + id + "/../../files"} {
		req, _ := http.NewRequest("GET", e.base+p, nil)
		code, _, h := get(t, c, req)
		if loc := h.Get("Location"); code/100 != 3 || !strings.HasPrefix(loc, strings.TrimPrefix(e.base, e.origin)+"/") {
			t.Errorf("GET %s: %d, Location %q: want a redirect under the secret path", p, code, loc)
		}
	}
	e.untouched(id, "outside", "", "")
}
