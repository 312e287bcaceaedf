package llmtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// models answers the model listings of the three APIs, in the dialect
// of the client asking.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	d := openaiDialect
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		d = ollamaDialect
	case r.Header.Get("Anthropic-Version") != "":
		// OpenAI and Anthropic share the path; the version header that
		// every Anthropic client sends tells them apart.
		d = anthropicDialect
	}
	req, _ := s.record(d.name, r)
	if !s.authorized(d, r) {
		d.fail(w, http.StatusUnauthorized, failAuth, 0)
		return
	}
	if s.script.EchoModels {
		s.echoHeaders(w, d, r, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	models := slices.Clone(s.script.Models)
	s.mu.Unlock()
	if len(models) == 0 {
		models = []Model{{ID: "llmtest"}}
	}
	for i := range models {
		if models[i].Context == 0 {
			models[i].Context = 32768
		}
	}
	body, status := d.models(models, r.PathValue("id"), req.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// A failure is a kind of error response, rendered in each API's shape.
type failure int

const (
	failBadRequest failure = iota
	failAuth
	failRate
	failServer
	failOverflow
)

// A dialect is one API's wire format.
type dialect struct {
	name        string
	contentType string // of a streamed response
	// render writes a turn as a stream of events.
	render func(st *stream, t *Turn, req *Request, seq int)
	// errorBody is the JSON body of an error response.
	errorBody func(status int, why failure) []byte
	// streamError is the in-stream error event FailAfter sends.
	streamError []byte
	// models answers a model listing, or the details of model id.
	models func(models []Model, id string, body []byte) ([]byte, int)
}

func (d *dialect) fail(w http.ResponseWriter, status int, why failure, retryAfter int) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(d.errorBody(status, why))
}

// pieces splits s into pieces of at most n bytes, cut at rune boundaries.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !runeStart(s[i]) {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// jsonString returns s as a JSON string literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
