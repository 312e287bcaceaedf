package web

import (
	"strings"
	"testing"
	"time"
)

// TestChatSenderTails: while a reply streams, each chunk goes to the page
// as the text it adds (escaped as the page sets it: textContent), not the
// whole block again; the block is drawn whole (rendered, sanitized) at
// most every renderEvery, when another block follows it, and when the
// session is no longer busy. A UTF-8 sequence split by a read waits for
// its end.
func TestChatSenderTails(t *testing.T) {
	var p chatParser
	var c chatSender
	now := time.Unix(1000, 0)
	write := func(s string, live bool) []chatMsg {
		view, first := p.Write([]byte(s))
		return c.update(view, first, live, now)
	}
	m := write("user: hi\nassistant: Some **bold**", true)
	if len(m) != 2 || m[0].HTML == "" || m[1].HTML == "" || !strings.Contains(m[1].HTML, "<strong>bold</strong>") {
		t.Fatalf("first write: %+v", m)
	}
	var tails []string
	for _, chunk := range []string{" more", " <script>x()</script>", "\nline \x1b[1m", "two \xe2\x82", "\xac end"} {
		now = now.Add(10 * time.Millisecond)
		for _, msg := range write(chunk, true) {
			if msg.HTML != "" || msg.I != 1 {
				t.Fatalf("chunk %q drew %+v, want a tail of block 1", chunk, msg)
			}
			tails = append(tails, msg.Tail)
		}
	}
	want := []string{" more", " <script>x()</script>", "\nline ␛[1m", "two ", "€ end"}
	if strings.Join(tails, "|") != strings.Join(want, "|") {
		t.Errorf("tails %q, want %q", tails, want)
	}
	// After renderEvery the block is drawn whole again.
	now = now.Add(renderEvery)
	m = write(" later", true)
	if len(m) != 1 || m[0].Tail != "" || !strings.Contains(m[0].HTML, "&lt;script&gt;") || strings.Contains(m[0].HTML, "<script") {
		t.Fatalf("after renderEvery: %+v", m)
	}
	now = now.Add(10 * time.Millisecond)
	if m = write(" again", true); len(m) != 1 || m[0].Tail != " again" {
		t.Fatalf("a tail after the redraw: %+v", m)
	}
	// A block after it: the streamed one is drawn whole, the new one too.
	m = write("\n:: info line\n", true)
	if len(m) != 2 || m[0].I != 1 || m[0].HTML == "" || !strings.Contains(m[0].HTML, "again") || m[1].I != 2 || m[1].HTML == "" {
		t.Fatalf("a following block: %+v", m)
	}
	// The session goes idle with a tail on the last block: drawn whole.
	write("assistant: last", true)
	now = now.Add(10 * time.Millisecond)
	if m = write(" words", true); len(m) != 1 || m[0].Tail != " words" {
		t.Fatalf("tail: %+v", m)
	}
	view, _ := p.Write(nil)
	m = c.update(view, len(view)-1, false, now)
	if len(m) != 1 || m[0].I != 3 || !strings.Contains(m[0].HTML, "last words") {
		t.Fatalf("idle: %+v", m)
	}
	if m = c.update(view, len(view)-1, false, now); len(m) != 0 {
		t.Fatalf("idle again, nothing changed: %+v", m)
	}
}
