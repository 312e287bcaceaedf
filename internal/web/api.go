package web

import (
	"errors"
	"net/http"
	"strings"
	"unicode"
)

// apiNew makes a session: the fields are the keys of s/new.
func (s *Server) apiNew(w http.ResponseWriter, r *http.Request) {
	var req struct{ Cwd, Name, Agent, Backend, Model string }
	if !body(w, r, &req) {
		return
	}
	var spec strings.Builder
	for _, kv := range [][2]string{{"cwd", req.Cwd}, {"name", req.Name}, {"agent", req.Agent}, {"backend", req.Backend}, {"model", req.Model}} {
		v := strings.TrimSpace(kv[1])
		// s/new takes blank-separated key=value pairs: a blank in a
		// value would begin another key (a name "x\tmodel=y" set the model).
		if strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			reply(w, errors.New(kv[0]+": one word please (s/new takes no blanks or control characters in a value)"), nil)
			return
		}
		if v != "" {
			spec.WriteString(kv[0] + "=" + v + "\n")
		}
	}
	id, err := s.create(r.Context(), spec.String())
	s.list.changed()
	reply(w, err, map[string]string{"id": id})
}

// apiSession does one thing to a session: prompt, queue, stop,
// compact, resume, rename or end.
func (s *Server) apiSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req struct{ Text string }
	if !body(w, r, &req) {
		return
	}
	ctx := r.Context()
	var err error
	switch op := r.PathValue("op"); op {
	case "prompt":
		err = s.put(ctx, "s/"+id+"/prompt", []byte(req.Text), false)
	case "queue":
		err = s.put(ctx, "s/"+id+"/fifo.in", []byte(req.Text), false)
	case "stop", "compact", "resume":
		err = s.ctl(ctx, id, op)
	case "rename":
		name := strings.TrimSpace(req.Text)
		if name == "" || strings.ContainsAny(name, "\n\r") {
			err = errors.New("rename: give one name")
		} else {
			err = s.ctl(ctx, id, "rn "+name)
		}
		s.resyncList()
	case "end":
		err = s.o.Fsys.Remove(ctx, "s/"+id)
		s.resyncList()
	default:
		http.NotFound(w, r)
		return
	}
	reply(w, err, nil)
}

// resyncList re-reads s/idx before a rename or an end is answered, so
// that the page the script then loads (the session's, with its name, or
// the list, without the ended session) is drawn from the list as it is
// now, not from the one before the change.
func (s *Server) resyncList() {
	if err := s.list.resync(); err != nil && s.ctx.Err() == nil {
		s.o.Logf("web: s/idx: %v", err)
	}
}

// apiAsk answers a consent request with allow or deny.
func (s *Server) apiAsk(w http.ResponseWriter, r *http.Request) {
	var req struct{ Text string }
	if !body(w, r, &req) {
		return
	}
	if req.Text != "allow" && req.Text != "deny" {
		reply(w, errors.New("answer allow or deny"), nil)
		return
	}
	n := r.PathValue("n")
	if strings.Trim(n, "0123456789") != "" {
		http.NotFound(w, r)
		return
	}
	reply(w, s.put(r.Context(), "s/"+r.PathValue("id")+"/ask/"+n, []byte(req.Text+"\n"), false), nil)
}
