package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

func TestNoTokenNoData(t *testing.T) {
	e := start(t, &llmtest.Script{})
	id := e.newSession("secretname")
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/", "/s/" + id, "/s/" + id + "/systemprompt", "/events/list", "/events/s/" + id,
		"/files", "/edit?p=a/default.json", "/search?q=x", "/assets/app.js", "/?token=wrong", "/nothing"} {
		req, _ := http.NewRequest("GET", e.base+p, nil)
		code, body, h := get(t, plain, req)
		if code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, code)
		}
		if strings.Contains(body, id) || strings.Contains(body, "secretname") || strings.Contains(body, "<") {
			t.Errorf("GET %s without the token says %q", p, body)
		}
		if h.Get("Set-Cookie") != "" {
			t.Errorf("GET %s without the token set a cookie", p)
		}
	}
	req, _ := http.NewRequest("POST", e.base+"/api/s/"+id+"/prompt?token="+url.QueryEscape(tokenOf(e)), strings.NewReader(`{"Text":"hi"}`))
	req.Header.Set("Origin", e.origin)
	req.Header.Set("Content-Type", "application/json")
	if code, _, _ := get(t, plain, req); code != http.StatusUnauthorized {
		t.Errorf("POST with the token in the query: %d, want 401 (the token is taken by GET only)", code)
	}
	if p := e.read("s/" + id + "/prompt.prev"); p != "" {
		t.Errorf("a refused request made a prompt: %q", p)
	}
}

func tokenOf(e *env) string {
	u, _ := url.Parse(e.url)
	return u.Query().Get("token")
}

func TestTokenBecomesStrictCookie(t *testing.T) {
	e := start(t, &llmtest.Script{})
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", e.url, nil)
	code, _, h := get(t, plain, req)
	if code != http.StatusSeeOther || strings.Contains(h.Get("Location"), "token") {
		t.Fatalf("GET URL: %d, Location %q: want a redirect that drops the token", code, h.Get("Location"))
	}
	c := h.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=" + strings.TrimPrefix(e.base, e.origin) + "/;", tokenOf(e)} {
		if !strings.Contains(c, want) {
			t.Errorf("Set-Cookie %q lacks %s", c, want)
		}
	}
	// Another start has another token: the old URL opens nothing.
	e2 := start(t, &llmtest.Script{})
	if tokenOf(e) == tokenOf(e2) || len(tokenOf(e)) < 40 {
		t.Errorf("tokens %q and %q: want fresh, long ones", tokenOf(e), tokenOf(e2))
	}
}

func TestHostHeaderAgainstRebinding(t *testing.T) {
	e := start(t, &llmtest.Script{})
	id := e.newSession("rebind")
	c := e.client()
	_, port, _ := strings.Cut(strings.TrimPrefix(e.origin, "http://"), ":")
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.nip.io:" + port, "127.0.0.1:1"} {
		req, _ := http.NewRequest("GET", e.base+"/", nil)
		req.Host = host
		code, body, _ := get(t, c, req)
		if code != http.StatusMisdirectedRequest || strings.Contains(body, id) || strings.Contains(body, "rebind") {
			t.Errorf("Host %s: %d %q, want 421 and no data", host, code, body)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		req, _ := http.NewRequest("GET", e.base+"/", nil)
		req.Host = host
		if code, _, _ := get(t, c, req); code != http.StatusOK && code != http.StatusUnauthorized {
			t.Errorf("Host %s: %d", host, code)
		}
	}
}

func TestCSRF(t *testing.T) {
	e := start(t, &llmtest.Script{})
	id := e.newSession("csrf")
	c := e.client()
	csrf := csrfOf(t, e, c)
	post := func(origin, token, ctype, site string) int {
		req, _ := http.NewRequest("POST", e.base+"/api/s/"+id+"/prompt", strings.NewReader(`{"Text":"from `+origin+`"}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.Header.Set("X-Ollie-CSRF", token)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		req.Header.Set("Content-Type", ctype)
		code, _, _ := get(t, c, req)
		return code
	}
	for _, a := range []struct{ origin, token, ctype, site string }{
		{"", csrf, "application/json", ""},
		{"http://evil.example", csrf, "application/json", ""},
		{"null", csrf, "application/json", ""},
		{e.origin, "", "application/json", ""},
		{e.origin, "wrong", "application/json", ""},
		{e.origin, csrf, "application/json", "cross-site"},
		{e.origin, csrf, "application/x-www-form-urlencoded", ""},
		{e.origin, csrf, "text/plain", ""},
	} {
		if code := post(a.origin, a.token, a.ctype, a.site); code < 400 {
			t.Errorf("POST with %+v: %d, want it refused", a, code)
		}
	}
	if p := e.read("s/" + id + "/prompt.prev"); p != "" {
		t.Fatalf("a refused request made a prompt: %q", p)
	}
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		req, _ := http.NewRequest(m, e.base+"/api/s/"+id+"/end", nil)
		req.Header.Set("Origin", e.origin)
		req.Header.Set("X-Ollie-CSRF", csrf)
		if code, _, _ := get(t, c, req); code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, code)
		}
	}
	// A page of another site may open a WebSocket to any address (no
	// same-origin policy there): the handshake's Origin must be ours.
	for _, origin := range []string{"http://evil.example", "", "null"} {
		req, _ := http.NewRequest("GET", e.base+"/events/s/"+id, nil)
		for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="} {
			req.Header.Set(k, v)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if code, body, _ := get(t, c, req); code != http.StatusForbidden || strings.Contains(body, "csrf") {
			t.Errorf("WebSocket from Origin %q: %d %q", origin, code, body)
		}
	}
	if code := post(e.origin, csrf, "application/json", "same-origin"); code != http.StatusOK {
		t.Fatalf("the page's own POST: %d", code)
	}
	testutil.Until(t, "the prompt", func() bool { return strings.Contains(e.read("s/"+id+"/prompt.prev"), "from "+e.origin) })
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf" content="([^"]+)">`)

func csrfOf(t *testing.T, e *env, c *http.Client) string {
	t.Helper()
	req, _ := http.NewRequest("GET", e.base+"/", nil)
	_, body, _ := get(t, c, req)
	m := csrfMeta.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	return m[1]
}

func TestStrictCSPAndNoInlineScript(t *testing.T) {
	e := start(t, &llmtest.Script{})
	id := e.newSession("csp")
	c := e.client()
	inline := regexp.MustCompile(`(?i)\son[a-z]+\s*=|javascript:|style=|<style`)
	script := regexp.MustCompile(`(?i)<script[^>]*>[^<]*`)
	for _, p := range []string{"/", "/s/" + id, "/s/" + id + "/systemprompt", "/s/" + id + "/context", "/s/" + id + "/plan",
		"/files", "/edit?p=a/default.json", "/edit?new=m", "/search?q=csp"} {
		req, _ := http.NewRequest("GET", e.base+p, nil)
		code, body, h := get(t, c, req)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, code, body)
			continue
		}
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %s", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: CSP %q allows unsafe", p, csp)
		}
		for _, m := range script.FindAllString(body, -1) {
			if !strings.HasPrefix(m, `<script src="`+strings.TrimPrefix(e.base, e.origin)+`/assets/`) || !strings.HasSuffix(m, ">") {
				t.Errorf("GET %s: script %q is not the page's own file", p, m)
			}
		}
		if m := inline.FindString(body); m != "" {
			t.Errorf("GET %s: inline script or style %q in the page", p, m)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", p, h)
		}
	}
}

func TestPathsStayInTheirPlace(t *testing.T) {
	e := start(t, &llmtest.Script{})
	c := e.client()
	csrf := csrfOf(t, e, c)
	send := func(p, body string) (int, string) {
		req, _ := http.NewRequest("POST", e.base+p, strings.NewReader(body))
		req.Header.Set("Origin", e.origin)
		req.Header.Set("X-Ollie-CSRF", csrf)
		req.Header.Set("Content-Type", "application/json")
		code, b, _ := get(t, c, req)
		return code, b
	}
	for _, p := range []string{"/api/s/..%2Fa/prompt", "/api/s/%2E%2E/prompt", "/api/ask/x%2F..%2F..%2Fa/1"} {
		if code, b := send(p, `{"Text":"allow"}`); code != http.StatusNotFound {
			t.Errorf("POST %s: %d %s", p, code, b)
		}
	}
	for _, p := range []string{"s/x/ctl", "a/../x", "m/../a/default.json", "m/", "m", "x/elevate", "sk/idx", "m/a/b", "p/x.md"} {
		code, b := send("/api/put", `{"Path":"`+p+`","Text":"x"}`)
		if code == http.StatusOK || !strings.Contains(b, "only files of") {
			t.Errorf("put %s: %d %s", p, code, b)
		}
	}
	if s := e.read("a/default.json"); !strings.HasPrefix(strings.TrimSpace(s), "{") {
		t.Errorf("a/default.json changed: %q", s)
	}
}
