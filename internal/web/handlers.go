package web

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
)

//go:embed assets
var assets embed.FS

// pages are parsed at the first page served (see md in render.go).
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"title": func(r *row) string {
			if r.Name != "" {
				return r.Name
			}
			return r.ID
		},
	}).ParseFS(assets, "assets/*.html"))
})

// routes are all under the secret path, so that the mux's own
// redirects (to a path with its final "/", or a clean one) keep it.
func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	p := s.prefix
	m.Handle("GET "+p+"/assets/", http.StripPrefix(p+"/assets/", staticFiles(static)))
	m.HandleFunc("GET "+p+"/{$}", s.index)
	m.HandleFunc("GET "+p+"/s/{id}", withID(s.session))
	m.HandleFunc("GET "+p+"/s/{id}/{file}", withID(s.view))
	m.HandleFunc("GET "+p+"/files", s.files)
	m.HandleFunc("GET "+p+"/edit", s.edit)
	m.HandleFunc("GET "+p+"/search", s.search)
	m.HandleFunc("GET "+p+"/events/list", s.listStream)
	m.HandleFunc("GET "+p+"/events/s/{id}", withID(s.sessionStream))
	m.HandleFunc("POST "+p+"/api/new", s.apiNew)
	m.HandleFunc("POST "+p+"/api/s/{id}/{op}", withID(s.apiSession))
	m.HandleFunc("POST "+p+"/api/ask/{id}/{n}", withID(s.apiAsk))
	m.HandleFunc("POST "+p+"/api/put", s.apiPut)
	s.mux = m
}

// withID refuses a session id that is not a plain name before h sees
// it, so that no path built from it leaves the session's directory.
func withID(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !validID(r.PathValue("id")) {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}
}

// staticFiles serves the embedded script and styles (never the
// templates, which are not pages on their own).
func staticFiles(fsys fs.FS) http.Handler {
	h := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path.Ext(r.URL.Path) {
		case ".js", ".css", ".svg":
			h.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// page is what every template gets.
type page struct {
	Base  string // the secret path every link starts with
	Title string
	CSRF  string
	Nav   string
	Data  any
}

func (s *Server) render(w http.ResponseWriter, name, title, nav string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages().ExecuteTemplate(w, name, page{Base: s.prefix, Title: title, CSRF: s.csrf, Nav: nav, Data: data}); err != nil {
		s.o.Logf("web: %s: %v", name, err)
	}
}

// firstRows is how many rows of the session list the page gets in its
// HTML, newest first: a screenful. The rest come over the list's stream
// after the page has loaded, and it draws them a chunk at a time, so a
// list of thousands is on screen as fast as one of fifty.
const firstRows = 50

type indexData struct {
	Rows     []*row // the first firstRows
	Total    int
	Version  int64
	Agents   []string
	Backends []string
	Cwd      string
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	d := indexData{}
	d.Rows, d.Version = s.list.snapshot()
	d.Total = len(d.Rows)
	d.Rows = d.Rows[:min(len(d.Rows), firstRows)]
	if dirs, err := s.o.Fsys.ReadDir(r.Context(), "a"); err == nil {
		for _, e := range dirs {
			if n, ok := strings.CutSuffix(e.Name, ".json"); ok {
				d.Agents = append(d.Agents, n)
			}
		}
		sort.Strings(d.Agents)
	}
	if b, err := s.read(r.Context(), "backends"); err == nil {
		for _, line := range strings.Split(b, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				d.Backends = append(d.Backends, f[0])
			}
		}
	}
	if len(d.Rows) > 0 {
		d.Cwd = d.Rows[0].Cwd
	}
	s.render(w, "index.html", "sessions", "sessions", d)
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	rw := s.lookup(r.PathValue("id"))
	if rw == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	s.render(w, "session.html", rw.Name+" "+rw.ID, "sessions", rw)
}

// lookup finds a session by id or name; one the list does not have yet
// (made by another client a moment ago) is looked for in s/idx.
func (s *Server) lookup(key string) *row {
	if rw := s.list.find(key); rw != nil {
		return rw
	}
	if s.list.resync() != nil {
		return nil
	}
	return s.list.find(key)
}

// viewFiles are the read-only files of a session the page shows.
var viewFiles = map[string]bool{"systemprompt": true, "context": true, "plan": true, "queue": true, "usage": true, "cfg": true}

type viewData struct {
	Row  *row
	File string
	Text string
	Err  string
}

func (s *Server) view(w http.ResponseWriter, r *http.Request) {
	rw := s.lookup(r.PathValue("id"))
	file := r.PathValue("file")
	if rw == nil || !viewFiles[file] {
		http.NotFound(w, r)
		return
	}
	text, err := s.read(r.Context(), "s/"+rw.ID+"/"+file)
	d := viewData{Row: rw, File: file, Text: visible(text)}
	if err != nil {
		d.Err = visible(err.Error())
	}
	if file == "context" {
		d.Text = prettyJSONLines(d.Text)
	}
	s.render(w, "view.html", file, "sessions", d)
}

// prettyJSONLines indents each JSON line, for reading a context.
func prettyJSONLines(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var v any
		if json.Unmarshal([]byte(line), &v) != nil {
			b.WriteString(line + "\n")
			continue
		}
		out, _ := json.MarshalIndent(v, "", "  ")
		b.Write(out)
		b.WriteString("\n\n")
	}
	return b.String()
}

// reply answers an API call: {"ok":true,...} or {"error":"..."} with
// the tree's own error text.
func reply(w http.ResponseWriter, err error, extra map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	out := map[string]any{"ok": err == nil}
	if err != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		out["error"] = visible(err.Error())
	}
	for k, v := range extra {
		out[k] = v
	}
	json.NewEncoder(w).Encode(out)
}

// body decodes a JSON request of at most 1 MiB; a form post is refused,
// since only the page's script (same origin, with the CSRF header)
// sends JSON.
func body(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "415 send JSON", http.StatusUnsupportedMediaType)
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(v); err != nil {
		http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}
