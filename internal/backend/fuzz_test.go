package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"ollie.dev/ollie/internal/config"
)

// FuzzDecoders feeds the lines of a stream, whatever they hold, to the
// three stream decoders, as the SDKs hand them over: each line that
// decodes as the API's event is given to its decoder; and the whole
// stream to the server-sent event reader the OpenAI backend uses. None may panic,
// and what a reply holds stays what the loop relies on: tool arguments
// that are valid JSON, and reasoning never in the answer's place.
func FuzzDecoders(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && !bytes.HasSuffix([]byte(name), []byte(".md")) {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		req := &Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}
		oa := openaiDecoder{a: newAssembler(ctx, "o", req, "m", nil)}
		an := anthropicDecoder{a: newAssembler(ctx, "a", req, "m", nil)}
		ol := &ollamaBackend{base: base{cfg: config.Backend{Name: "l", Kind: config.KindOllama}}}
		la := newAssembler(ctx, "l", req, "m", nil)
		for _, line := range bytes.Split(data, []byte("\n")) {
			payload := bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:"))
			oa.event(payload)
			an.event(payload, nil)
			ol.line(la, line)
		}
		oa.flushCalls()
		// And the whole input as the stream the OpenAI backend reads.
		sd := openaiDecoder{a: newAssembler(ctx, "s", req, "m", nil)}
		sse := newSSEReader(bytes.NewReader(data))
		for n := 0; ; n++ {
			ev, err := sse.next()
			if err != nil {
				break
			}
			if len(ev) > len(data) || n > len(data) {
				t.Fatalf("event %d of %d bytes from %d bytes of stream", n, len(ev), len(data))
			}
			sd.event(ev)
		}
		sd.flushCalls()
		// And as the stream the Anthropic backend reads, event names too.
		sa := anthropicDecoder{a: newAssembler(ctx, "t", req, "m", nil)}
		asse := newSSEReader(bytes.NewReader(data))
		for {
			ev, err := asse.next()
			if err != nil {
				break
			}
			sa.event(ev, asse.event)
		}
		for _, a := range []*assembler{oa.a, an.a, la, sd.a, sa.a} {
			r, _ := a.finish(StopEnd)
			for _, c := range r.Message.Calls {
				if !json.Valid(c.Args) {
					t.Fatalf("call %s has arguments that are not JSON: %q", c.ID, c.Args)
				}
			}
			if _, err := json.Marshal(r.Message); err != nil {
				t.Fatalf("the reply cannot be stored: %v", err)
			}
		}
	})
}
