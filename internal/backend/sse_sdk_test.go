package backend

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// FuzzSSEAsTheSDK: the server-sent event reader gives the data of the
// same events, in the same order, as the SDK's decoder, on any stream
// (the SDK ends each event's data with a newline, which ollie's reader
// leaves out).
func FuzzSSEAsTheSDK(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: x\ndata: y\r\n\r\n: comment\nevent: e\ndata:z\n\n"))
	f.Add([]byte("data:\n\ndata: cut"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		var sdk [][]byte
		dec := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(bytes.NewReader(stream))})
		for dec.Next() {
			sdk = append(sdk, bytes.TrimSuffix(bytes.Clone(dec.Event().Data), []byte("\n")))
		}
		if dec.Err() != nil {
			return // a line longer than the SDK's scanner takes
		}
		var ours [][]byte
		r := newSSEReader(bytes.NewReader(stream))
		for {
			ev, err := r.next()
			if err != nil {
				break
			}
			ours = append(ours, bytes.Clone(ev))
		}
		if len(ours) != len(sdk) {
			t.Fatalf("%q: %d events, the SDK %d:\nollie %q\nSDK   %q", stream, len(ours), len(sdk), ours, sdk)
		}
		for i := range ours {
			if !bytes.Equal(ours[i], sdk[i]) {
				t.Fatalf("%q: event %d is %q, to the SDK %q", stream, i, ours[i], sdk[i])
			}
		}
	})
}
