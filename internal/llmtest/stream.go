package llmtest

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// A stream writes the events of one streamed response, paced as the
// script says, and carries out the turn's scripted stream failures.
type stream struct {
	w       http.ResponseWriter
	ctx     context.Context
	d       *dialect
	latency time.Duration
	instant bool // buffer everything, write once at the end
	chunk   int
	cut     int // drop the connection after this many events; 0 never
	fail    int // send the dialect's error event after this many events; 0 never

	n    int  // events sent
	done bool // no more events: failed, or the client went away
	buf  []byte
}

func (s *Server) newStream(w http.ResponseWriter, r *http.Request, d *dialect, t *Turn) *stream {
	s.mu.Lock()
	sc := &s.script
	st := &stream{
		w: w, ctx: r.Context(), d: d,
		latency: time.Duration(sc.Latency), instant: sc.Instant, chunk: sc.Chunk,
		cut: t.CutAfter, fail: t.FailAfter,
	}
	s.mu.Unlock()
	if st.chunk <= 0 {
		st.chunk = 4
	}
	w.Header().Set("Content-Type", d.contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return st
}

// send writes one framed event.
func (st *stream) send(ev []byte) {
	if st.done {
		return
	}
	if st.cut > 0 && st.n == st.cut {
		st.flush()
		// The server closes the connection without ending the chunked
		// body, so the client reads an unexpected EOF, as when a proxy or
		// the network drops a stream.
		panic(http.ErrAbortHandler)
	}
	if st.fail > 0 && st.n == st.fail {
		st.buf = append(st.buf, st.d.streamError...)
		st.done = true
		return
	}
	st.n++
	if st.instant {
		st.buf = append(st.buf, ev...)
		return
	}
	if st.latency > 0 && !st.sleep() {
		st.done = true
		return
	}
	st.buf = append(st.buf, ev...)
	st.flush()
}

func (st *stream) sleep() bool {
	t := time.NewTimer(st.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-st.ctx.Done():
		return false
	}
}

func (st *stream) flush() {
	if len(st.buf) == 0 {
		return
	}
	if _, err := st.w.Write(st.buf); err != nil {
		st.done = true
	}
	st.buf = st.buf[:0]
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

// end writes what is buffered.
func (st *stream) end() { st.flush() }

// Render returns the stream the server sends for t to a streaming
// request for model in api ("openai", "anthropic" or "ollama"), with its
// text in pieces of chunk characters (0: 4) and usage asked for. Served
// as a Raw turn, it is the same stream written at once, without the
// server's cost of making each event: what a benchmark needs to measure
// how fast a client takes a stream in.
func Render(api string, t Turn, chunk int, model string) ([]byte, error) {
	var d *dialect
	switch api {
	case "openai":
		d = openaiDialect
	case "anthropic":
		d = anthropicDialect
	case "ollama":
		d = ollamaDialect
	default:
		return nil, fmt.Errorf("llmtest: no API %q (openai, anthropic or ollama)", api)
	}
	if chunk <= 0 {
		chunk = 4
	}
	st := &stream{ctx: context.Background(), d: d, instant: true, chunk: chunk}
	d.render(st, &t, &Request{API: api, Model: model, Stream: true, IncludeUsage: true}, 1)
	return st.buf, nil
}
