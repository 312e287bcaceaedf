package web

import (
	"errors"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// editDirs are the directories whose files the page edits: memory
// notes, skills, tools and agents. The tree checks what is written
// (an agent's JSON, a skill's front matter) and its error is shown.
var editDirs = []string{"m", "sk", "t", "a"}

var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]+$`) })

// editPath checks that p is a file directly in one of editDirs.
func editPath(p string) (string, error) {
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	for _, d := range editDirs {
		if dir == d && validName().MatchString(name) && name != "." && name != ".." && name != "idx" {
			return d + "/" + name, nil
		}
	}
	return "", errors.New("only files of m/, sk/, t/ and a/ are edited here (names of letters, digits, . _ -)")
}

func validID(id string) bool { return validName().MatchString(id) && id != "." && id != ".." }

type filesData struct {
	Dirs []fileDir
}

type fileDir struct {
	Name  string
	Files []string
	Err   string
}

func (s *Server) files(w http.ResponseWriter, r *http.Request) {
	var d filesData
	for _, dir := range editDirs {
		fd := fileDir{Name: dir}
		ents, err := s.o.Fsys.ReadDir(r.Context(), dir)
		if err != nil {
			fd.Err = visible(err.Error())
		}
		for _, e := range ents {
			if e.Name != "idx" {
				fd.Files = append(fd.Files, e.Name)
			}
		}
		sort.Strings(fd.Files)
		d.Dirs = append(d.Dirs, fd)
	}
	s.render(w, "files.html", "files", "files", d)
}

type editData struct {
	Path, Dir, Text, Err string
	New                  bool
}

func (s *Server) edit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if dir := q.Get("new"); dir != "" {
		for _, d := range editDirs {
			if d == dir {
				s.render(w, "edit.html", "new file", "files", editData{Dir: d, New: true})
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	p, err := editPath(q.Get("p"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d := editData{Path: p, Dir: path.Dir(p)}
	text, err := s.read(r.Context(), p)
	if err != nil {
		d.Err = visible(err.Error())
	}
	d.Text = text
	s.render(w, "edit.html", p, "files", d)
}

func (s *Server) apiPut(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Path, Text string
		Create     bool
	}
	if !body(w, r, &req) {
		return
	}
	p, err := editPath(req.Path)
	if err != nil {
		reply(w, err, nil)
		return
	}
	if req.Create {
		if _, err := s.o.Fsys.Stat(r.Context(), p); err == nil {
			reply(w, errors.New(p+" exists already"), nil)
			return
		}
	}
	reply(w, s.put(r.Context(), p, []byte(req.Text), req.Create), map[string]string{"path": p})
}

// A hit of a search: a line of a chat with its session.
type hit struct {
	Session, Title, Where, Line string
}

type searchData struct {
	Q    string
	Hits []hit
	More bool
}

const maxHits = 200

// search looks for a string in every session's chat and every saved
// transcript (the passive memory), case-insensitively.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := searchData{Q: q}
	if q != "" {
		needle := strings.ToLower(q)
		look := func(p, session, title, where string) bool {
			text, err := s.read(r.Context(), p)
			if err != nil {
				return true
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(strings.ToLower(line), needle) {
					if len(d.Hits) == maxHits {
						d.More = true
						return false
					}
					if len(line) > 300 {
						line = line[:300] + "…"
					}
					d.Hits = append(d.Hits, hit{Session: session, Title: title, Where: where, Line: visible(strings.ToValidUTF8(line, "\uFFFD"))})
				}
			}
			return true
		}
		rows, _ := s.list.snapshot()
		for _, rw := range rows {
			title := rw.Name
			if title == "" {
				title = rw.ID
			}
			if !look("s/"+rw.ID+"/chat", rw.ID, title, "chat") {
				break
			}
		}
		if ents, err := s.o.Fsys.ReadDir(r.Context(), "tr"); err == nil && !d.More {
			for _, e := range ents {
				if !look("tr/"+e.Name, "", e.Name, "transcript") {
					break
				}
			}
		}
	}
	s.render(w, "search.html", "search", "search", d)
}
