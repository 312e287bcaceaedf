package llmtest

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Server is a scripted LLM server listening on a loopback port. It is
// safe for concurrent use; concurrent chat requests take turns from the
// one script in the order they arrive.
type Server struct {
	URL string // http://127.0.0.1:PORT, no trailing slash

	srv *http.Server

	// mu guards the fields below it.
	mu     sync.Mutex
	script Script
	next   int // index in script.Turns of the next turn
	seq    int // chat requests served, for response ids
	reqs   []Request
	echoes []string // messages sent by echoHeaders
}

// Start starts a server on addr (e.g. "127.0.0.1:0") that answers as sc
// says. A nil sc answers every chat request with "ok".
func Start(addr string, sc *Script) (*Server, error) {
	s := &Server{}
	if sc != nil {
		s.script = *sc
		s.script.Turns = slices.Clone(sc.Turns)
		s.script.Rules = slices.Clone(sc.Rules)
	}
	if err := s.script.check(); err != nil {
		return nil, fmt.Errorf("llmtest: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("llmtest: %v", err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		// A dropped stream is a scripted event, not something to log.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go s.srv.Serve(ln)
	return s, nil
}

// TB is the part of testing.TB that NewTest uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// NewTest starts a server on a free loopback port for the duration of a
// test or benchmark.
func NewTest(tb TB, sc *Script) *Server {
	tb.Helper()
	s, err := Start("127.0.0.1:0", sc)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Close stops the server and drops open connections.
func (s *Server) Close() error { return s.srv.Close() }

// Append adds turns to the end of the script.
func (s *Server) Append(turns ...Turn) error {
	for i := range turns {
		if err := turns[i].check(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script.Turns = append(s.script.Turns, turns...)
	return nil
}

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat(openaiDialect))
	mux.HandleFunc("POST /v1/messages", s.chat(anthropicDialect))
	mux.HandleFunc("POST /api/chat", s.chat(ollamaDialect))
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /v1/models/{id}", s.models)
	mux.HandleFunc("GET /api/tags", s.models)
	mux.HandleFunc("POST /api/show", s.models)
	return mux
}

// record reads the request and appends it to the log.
func (s *Server) record(api string, r *http.Request) (Request, error) {
	body, err := io.ReadAll(r.Body)
	rec := Request{
		API: api, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body,
	}
	if err == nil && r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/show") {
		err = rec.parse()
	}
	s.mu.Lock()
	if !s.script.NoRecord {
		s.reqs = append(s.reqs, rec)
	}
	s.mu.Unlock()
	return rec, err
}

// authorized reports whether the request carries the script's key, in
// the header each API expects.
func (s *Server) authorized(d *dialect, r *http.Request) bool {
	if s.script.Key == "" {
		return true
	}
	if r.Header.Get("Authorization") == "Bearer "+s.script.Key {
		return true
	}
	return d == anthropicDialect && r.Header.Get("X-Api-Key") == s.script.Key
}

func (s *Server) chat(d *dialect) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := s.record(d.name, r)
		switch {
		case !s.authorized(d, r):
			d.fail(w, http.StatusUnauthorized, failAuth, 0)
			return
		case err != nil:
			d.fail(w, http.StatusBadRequest, failBadRequest, 0)
			return
		case !req.Stream:
			// Every ollie backend streams; a request that does not is a bug.
			d.fail(w, http.StatusBadRequest, failBadRequest, 0)
			return
		}
		turn, seq := s.pick(&req)
		for k, v := range turn.Headers {
			w.Header().Set(k, v)
		}
		if turn.EchoHeaders {
			s.echoHeaders(w, d, r, turn.Status)
			return
		}
		if turn.Raw != "" || turn.RawFile != "" {
			s.replay(w, d, &turn)
			return
		}
		switch {
		case turn.Overflow:
			d.fail(w, http.StatusBadRequest, failOverflow, 0)
		case turn.Status == http.StatusTooManyRequests:
			d.fail(w, turn.Status, failRate, turn.RetryAfter)
		case turn.Status >= 500:
			d.fail(w, turn.Status, failServer, turn.RetryAfter)
		case turn.Status == http.StatusUnauthorized || turn.Status == http.StatusForbidden:
			d.fail(w, turn.Status, failAuth, 0)
		case turn.Status != 0:
			d.fail(w, turn.Status, failBadRequest, turn.RetryAfter)
		default:
			st := s.newStream(w, r, d, &turn)
			d.render(st, &turn, &req, seq)
			st.end()
		}
	}
}

// replay sends a turn's recorded bytes.
func (s *Server) replay(w http.ResponseWriter, d *dialect, t *Turn) {
	raw, err := s.script.raw(t)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	status, ctype := http.StatusOK, d.contentType
	if t.Status != 0 {
		status, ctype = t.Status, "application/json"
	}
	if t.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(t.RetryAfter))
	}
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(status)
	io.WriteString(w, raw)
}

// pick chooses the turn for a chat request and returns it with the
// request's sequence number.
func (s *Server) pick(req *Request) (Turn, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	role, last := req.Last()
	for _, rule := range s.script.Rules {
		want := rule.Role
		if want == "" {
			want = "user"
		}
		if role != want {
			continue
		}
		if sub := rule.re.FindStringSubmatch(last); sub != nil {
			return rule.Then.expand(last, sub), s.seq
		}
	}
	var t Turn
	switch n := len(s.script.Turns); {
	case s.next < n:
		t = s.script.Turns[s.next]
		s.next++
		if s.script.Loop && s.next == n {
			s.next = 0
		}
	case s.script.Default != nil:
		t = *s.script.Default
	default:
		t = Turn{Text: "ok"}
	}
	return t.expand(last, nil), s.seq
}

func (t Turn) expand(last string, sub []string) Turn {
	t.Text = expand(t.Text, last, sub, false)
	calls := make([]Call, len(t.Calls))
	for i, c := range t.Calls {
		c.Args = []byte(expand(string(c.Args), last, sub, true))
		calls[i] = c
	}
	t.Calls = calls
	return t
}

// usage is the turn's scripted usage, or one derived from the sizes of
// the request and the response.
func (t *Turn) usage(req *Request) Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	out := len(t.Text) + len(t.Thinking)
	for _, c := range t.Calls {
		out += len(c.Args)
	}
	return Usage{Input: max(1, len(req.Body)/4), Output: max(1, out/4)}
}
