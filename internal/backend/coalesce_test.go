package backend_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
)

// The OpenAI and Ollama streams' text is passed on as it arrives: a piece
// the server sent alone reaches the callback before the server sends
// more (the server waits for it), and pieces that arrived together while
// the callback ran go on as one event, with nothing lost or reordered.
func TestOpenAIStreamPieces(t *testing.T) {
	streamPieces(t, config.KindOpenAI, func(s string) string {
		return fmt.Sprintf("data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", s)
	}, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

func TestOllamaStreamPieces(t *testing.T) {
	streamPieces(t, config.KindOllama, func(s string) string {
		return fmt.Sprintf("{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":%q},\"done\":false}\n", s)
	}, "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\"}\n")
}

func streamPieces(t *testing.T, kind string, chunk func(string) string, end string) {
	seen := make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(benchPaths[kind], r.URL.Path) {
			http.NotFound(w, r) // what else the backend asks, as a server without it
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		// One piece alone: the callback must see it before anything more
		// is sent.
		fmt.Fprint(w, chunk("lone "))
		fl.Flush()
		select {
		case <-seen:
		case <-time.After(time.Minute): // a deadline, not a timing: the callback never came
			t.Error("a piece sent alone was held")
			return
		}
		// Then a burst, in one write.
		var b strings.Builder
		for i := range 50 {
			b.WriteString(chunk(fmt.Sprintf("%d,", i)))
		}
		b.WriteString(end)
		fmt.Fprint(w, b.String())
	}))
	defer srv.Close()
	be, err := backend.New(config.Backend{Name: "o", Kind: kind, BaseURL: srv.URL, Model: "m"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	reply, err := be.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "x"}}}, func(e backend.Event) error {
		if e.Kind == backend.EventText {
			events = append(events, e.Text)
			seen <- e.Text
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("lone ")
	for i := range 50 {
		fmt.Fprintf(&want, "%d,", i)
	}
	if got := strings.Join(events, ""); got != want.String() || reply.Message.Text != want.String() {
		t.Fatalf("events %q, reply %q; want %q", got, reply.Message.Text, want.String())
	}
	if events[0] != "lone " {
		t.Errorf("first event %q", events[0])
	}
	if len(events) == 51 {
		t.Errorf("50 pieces read at once went on one by one")
	}
}

// A long burst read at once goes on in events of at most MaxHeld and a
// piece: text is not held while the stream keeps coming faster than it
// is taken (a follower of chat would wait for the daemon to catch up).
func TestOpenAIBurstHeldAtMost(t *testing.T) {
	piece := strings.Repeat("x", 63) + " "
	var b strings.Builder
	for range 4000 {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", piece)
	}
	b.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(benchPaths[config.KindOpenAI], r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, b.String())
	}))
	defer srv.Close()
	be, err := backend.New(config.Backend{Name: "o", Kind: config.KindOpenAI, BaseURL: srv.URL, Model: "m"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, largest := 0, 0
	reply, err := be.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "x"}}}, func(e backend.Event) error {
		if e.Kind == backend.EventText {
			n++
			largest = max(largest, len(e.Text))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Message.Text != strings.Repeat(piece, 4000) {
		t.Fatalf("reply of %d bytes, want %d", len(reply.Message.Text), 4000*len(piece))
	}
	if largest > backend.MaxHeld+len(piece) {
		t.Errorf("an event of %d bytes in %d, want at most %d", largest, n, backend.MaxHeld+len(piece))
	}
}
