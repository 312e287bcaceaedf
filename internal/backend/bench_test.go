package backend_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
)

// benchTurn is a typical agent step: a paragraph of text (about 250
// streamed pieces of 4 characters) and two tool calls.
var benchTurn = llmtest.Turn{
	Text: strings.Repeat("The build failed because a test depends on the network; ", 18),
	Calls: []llmtest.Call{
		llmtest.ExecuteCode("bash", "go test ./... 2>&1 | tail -50"),
		llmtest.ExecuteCode("bash", "grep -rn 'http.Get' --include='*_test.go' ."),
	},
	Usage: &llmtest.Usage{Input: 3000, Output: 300, CacheRead: 2000},
}

var benchPaths = map[string]string{
	config.KindOpenAI:    "/v1/chat/completions",
	config.KindAnthropic: "/v1/messages",
	config.KindOllama:    "/api/chat",
}

// BenchmarkChat streams a full response through each backend from the
// instant scripted server: HTTP, decoding, events and assembly. The
// server runs in the same process, so the numbers include its work;
// BenchmarkRawHTTP measures that part alone.
func BenchmarkChat(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			be, _ := newPair(b, kind, &llmtest.Script{Turns: []llmtest.Turn{benchTurn}, Loop: true, Instant: true, NoRecord: true})
			req := &backend.Request{
				System:   "You are a careful engineer.",
				Messages: []backend.Message{{Role: backend.RoleUser, Text: "why does the build fail?"}},
				Tools:    []backend.Tool{executeCode},
			}
			events := 0
			fn := func(backend.Event) error { events++; return nil }
			b.ReportAllocs()
			for b.Loop() {
				r, err := be.Chat(context.Background(), req, fn)
				if err != nil || len(r.Message.Calls) != 2 {
					b.Fatalf("%v %+v", err, r)
				}
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}

// BenchmarkRawHTTP reads the same responses with a plain HTTP client and
// no decoding: the cost of the server and the transport.
func BenchmarkRawHTTP(b *testing.B) {
	bodies := map[string]string{
		config.KindOpenAI:    `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"why?"}]}`,
		config.KindAnthropic: `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"why?"}]}`,
		config.KindOllama:    `{"model":"m","messages":[{"role":"user","content":"why?"}]}`,
	}
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			srv := llmtest.NewTest(b, &llmtest.Script{Turns: []llmtest.Turn{benchTurn}, Loop: true, Instant: true, NoRecord: true})
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Post(srv.URL+benchPaths[kind], "application/json", strings.NewReader(bodies[kind]))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkChatBurst decodes a 1 MiB reply of the OpenAI wire format in
// 64-byte pieces (16,384 events), made ahead and written at once by the
// scripted server: the backend's own pace on a fast stream, in process.
// `ollie bench`'s ingest.burst is the same reply into a real daemon.
func BenchmarkChatBurst(b *testing.B) {
	text := strings.Repeat(strings.Repeat("x", 63)+" ", 1<<20/64)
	raw, err := llmtest.Render("openai", llmtest.Turn{Text: text}, 64, "m")
	if err != nil {
		b.Fatal(err)
	}
	be, _ := newPair(b, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{{Raw: string(raw)}}, Loop: true, NoRecord: true})
	req := &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "big"}}}
	fn := func(backend.Event) error { return nil }
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := be.Chat(context.Background(), req, fn)
		if err != nil || len(r.Message.Text) != len(text) {
			b.Fatalf("%v, %d bytes", err, len(r.Message.Text))
		}
	}
}
