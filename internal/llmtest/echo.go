package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// echoHeaders answers with an error whose message repeats the request's
// headers, keys included, as some proxies and misconfigured servers do.
// The message carries them three ways: header lines, the JSON of the
// header map, and the bare value of each credential header; a client
// must hide all three. Each message sent is kept for Echoes, so a test
// can show that the key really came back.
func (s *Server) echoHeaders(w http.ResponseWriter, d *dialect, r *http.Request, status int) {
	if status == 0 {
		status = http.StatusBadRequest
	}
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("upstream rejected the request; it carried: ")
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s; ", k, strings.Join(r.Header[k], ", "))
	}
	js, _ := json.Marshal(r.Header)
	fmt.Fprintf(&b, "as JSON %s; values", js)
	for _, k := range []string{"Authorization", "X-Api-Key"} {
		if v := r.Header.Get(k); v != "" {
			fmt.Fprintf(&b, " (%s)", strings.TrimPrefix(v, "Bearer "))
		}
	}
	msg := b.String()
	s.mu.Lock()
	s.echoes = append(s.echoes, msg)
	s.mu.Unlock()
	var body []byte
	switch d {
	case anthropicDialect:
		body = fmt.Appendf(nil, `{"type":"error","error":{"type":"invalid_request_error","message":%s}}`, jsonString(msg))
	case ollamaDialect:
		body = fmt.Appendf(nil, `{"error":%s}`, jsonString(msg))
	default:
		body = fmt.Appendf(nil, `{"error":{"message":%s,"type":"invalid_request_error","param":null,"code":null}}`, jsonString(msg))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// Echoes returns the error messages sent by EchoHeaders turns and
// EchoModels listings, in order.
func (s *Server) Echoes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.echoes)
}
