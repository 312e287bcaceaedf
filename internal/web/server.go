// Package web is `ollie web`: a browser front-end that is one more 9P
// client of the daemon. The daemon has no HTTP API; this process reads
// and writes the same files a shell does (s/idx, s/<id>/chat, prompt,
// ctl, ask/, m/, ...) and draws them as a page.
//
// Security is the first concern, since a page is reachable by every
// other page the browser has open:
//
//   - it listens on loopback only (the caller checks the address);
//   - a fresh token is made at every start and printed in the URL; the
//     first request with it gets it back as an HttpOnly, SameSite=Strict
//     cookie, and every request without the cookie gets 401 and nothing
//     else;
//   - the whole page lives under a secret path prefix drawn from the
//     token, and the cookie is scoped to it: cookies do not tell ports
//     apart, so a cookie for "/" would go to every other server on the
//     host the browser visits; everything outside the prefix is 404;
//   - the Host header must name the address it listens on, so that a
//     DNS-rebound name (evil.example resolving to 127.0.0.1) gets nothing;
//   - every request that changes something is a POST that must carry the
//     page's CSRF token in a header and an Origin of this very server;
//   - a strict Content-Security-Policy lets the page run only its own
//     embedded script and load nothing from anywhere else, and model text
//     is rendered to HTML and sanitized here, before it reaches the page.
package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"ollie.dev/ollie/internal/ninep/client"
)

// Options configure a Server.
type Options struct {
	// Fsys is the 9P connection to the daemon for ordinary requests.
	Fsys *client.Fsys
	// Dial makes another connection, for the blocking reads of the
	// session list (a connection holds at most 1024 requests at once);
	// nil: they share Fsys.
	Dial func(ctx context.Context) (*client.Fsys, error)
	// Addr is the host:port the server listens on; the Host header of
	// every request must name it (or localhost with the same port).
	Addr string
	// Token is the secret of the URL; "" makes a fresh one.
	Token string
	Logf  func(format string, args ...any)
}

// Server serves the page. Its zero value is not usable; make one with New.
type Server struct {
	o      Options
	token  string
	prefix string // "/" and the secret path all pages are under, without the final "/"
	csrf   string
	cookie string // the cookie's name, per port: cookies do not tell ports apart
	hosts  map[string]bool
	mux    *http.ServeMux
	list   *sessionList

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New makes a Server for o.
func New(o Options) (*Server, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, token: o.Token, csrf: randomToken(), cookie: "ollie_web_" + port,
		hosts: map[string]bool{net.JoinHostPort(host, port): true, "localhost:" + port: true}}
	if s.token == "" {
		s.token = randomToken()
	}
	s.prefix = "/" + pathOf(s.token)
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		s.hosts["127.0.0.1:"+port], s.hosts["[::1]:"+port] = true, true
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.list = newSessionList(s)
	s.routes()
	return s, nil
}

// URL is the address to open, with the secret path and the token.
func (s *Server) URL() string {
	return "http://" + s.o.Addr + s.prefix + "/?token=" + url.QueryEscape(s.token)
}

// pathOf is the secret path segment for a token: 128 bits of a hash of
// it, so that the path (which a browser may show or keep in its history)
// does not give the token away, and the same token keeps the same URL.
func pathOf(token string) string {
	h := sha256.Sum256([]byte("ollie web path\x00" + token))
	return base64.RawURLEncoding.EncodeToString(h[:16])
}

// Start begins watching the tree for the session list.
func (s *Server) Start() error { return s.list.start() }

// Close stops the watchers and the streams.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ServeHTTP checks every request before it reaches a handler: the Host,
// the token, and for a POST the Origin and the CSRF token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if !s.hosts[r.Host] {
		http.Error(w, "421 wrong host: this server answers only to "+s.o.Addr, http.StatusMisdirectedRequest)
		return
	}
	// The page's streams are WebSockets to this host; 'self' covers
	// them in current browsers, the explicit ws: source in older ones.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self' ws://"+r.Host+"; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	// Outside the secret path there is nothing, not even a hint of it.
	rest, ok := strings.CutPrefix(r.URL.Path, s.prefix)
	if !ok || rest != "" && rest[0] != '/' {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("404 not found\n"))
		return
	}
	if rest == "" {
		// The cookie's path ends in "/", so the browser would not send it here.
		u := *r.URL
		u.Path, u.RawPath = s.prefix+"/", ""
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && equal(t, s.token) {
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.token, Path: s.prefix + "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Expires: time.Now().Add(30 * 24 * time.Hour)})
		// The token leaves the address bar and the history at once.
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if !s.hasToken(r) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte("401 unauthorized: open the URL that ollie web printed\n"))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		if err := s.checkCSRF(r); err != "" {
			http.Error(w, "403 "+err, http.StatusForbidden)
			return
		}
	default:
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hasToken says whether a cookie of r carries the token. Every cookie of
// the name counts: a page on another port of this host can set one of
// the same name (cookies do not tell ports apart), for "/" or for a
// longer path, which the browser sends too or first.
func (s *Server) hasToken(r *http.Request) bool {
	for _, c := range r.CookiesNamed(s.cookie) {
		if equal(c.Value, s.token) {
			return true
		}
	}
	return false
}

// checkCSRF says why a state-changing request is refused, or "". The
// cookie is SameSite=Strict already; the Origin and the header, which
// no other site can set without this server's consent (it gives none),
// are a second and third lock.
func (s *Server) checkCSRF(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "http://"+r.Host {
		return "cross-origin request refused (Origin " + quote(o) + ")"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "cross-site request refused"
	}
	if !equal(r.Header.Get("X-Ollie-CSRF"), s.csrf) {
		return "missing or wrong CSRF token: reload the page"
	}
	return ""
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func quote(s string) string {
	if s == "" {
		return "none"
	}
	return strings.ReplaceAll(visible(s), "\n", " ")
}
