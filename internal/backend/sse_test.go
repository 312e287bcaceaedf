package backend

import (
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the reader's buffer
	stream := ": a comment\r\n\r\n" +
		"event: message\r\ndata: one\r\n\r\n" +
		"data:two\ndata: lines\nid: 7\n\n\n\n" +
		"data: " + long + "\n\n" +
		"retry: 10\n\n" + // no data: no event
		"data: cut before its blank line"
	r := newSSEReader(strings.NewReader(stream))
	for _, want := range []string{"one", "two\nlines", long} {
		got, err := r.next()
		if err != nil || string(got) != want {
			t.Fatalf("next = %.40q, %v; want %.40q", got, err, want)
		}
	}
	if got, err := r.next(); err != io.EOF {
		t.Fatalf("a cut last event was returned: %q, %v", got, err)
	}
}
