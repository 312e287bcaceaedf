package web

import (
	"bytes"
	"strings"
)

// A block is one part of a chat as the page draws it: a prompt, a reply,
// reasoning, a tool call, its output, an info or error line. The chat
// file is plain text whose lines start with markers (user:, assistant:,
// -> for a call, :: for info, error:, <think> for reasoning); a line
// without one continues the block before it, and the lines after a call
// (once its arguments' closing parenthesis is there) are its output.
type block struct {
	Kind string // user, assistant, think, call, info, error
	Text string // the text after the marker, lines joined with \n
	Out  string // a call's output: the lines after it
	Call int    // a call's number in the chat (0, 1, ...)
}

// chatParser splits a chat into blocks as its bytes arrive. Whole lines
// are parsed once; the open line at the end (a reply still streaming) is
// applied to a copy each time, so it can grow without being parsed twice
// into the kept blocks.
type chatParser struct {
	blocks  []block // from whole lines
	partial []byte  // the bytes after the last newline
	inThink bool
	calls   int
}

// Write adds bytes of the chat. It returns the blocks as they stand and
// the index of the first that changed since the last Write.
func (p *chatParser) Write(b []byte) (view []block, first int) {
	// The last kept block may grow by whole lines, and the open line may
	// have changed it or the one after it: both are redrawn.
	first = max(0, len(p.blocks)-1)
	data := b
	if len(p.partial) > 0 {
		data = append(p.partial, b...)
		p.partial = nil
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			p.partial = append([]byte(nil), data...)
			break
		}
		p.line(string(data[:i]))
		data = data[i+1:]
	}
	view = p.view()
	return view, min(first, len(view))
}

// view is the kept blocks with the open line applied to a copy of the
// last one.
func (p *chatParser) view() []block {
	if len(p.partial) == 0 {
		return p.blocks
	}
	tmp := chatParser{inThink: p.inThink, calls: p.calls}
	base := len(p.blocks)
	if base > 0 {
		base--
		tmp.blocks = []block{p.blocks[base]}
	}
	tmp.line(string(p.partial))
	return append(p.blocks[:base:base], tmp.blocks...)
}

// markers are the line prefixes that begin a block.
var markers = []struct{ prefix, kind string }{
	{"user: ", "user"}, {"assistant: ", "assistant"}, {"-> ", "call"},
	{":: ", "info"}, {"error: ", "error"},
}

func (p *chatParser) line(s string) {
	if p.inThink {
		if strings.TrimSpace(s) == "</think>" {
			p.inThink = false
			return
		}
		p.appendText(s)
		return
	}
	if strings.TrimSpace(s) == "<think>" {
		p.inThink = true
		p.blocks = append(p.blocks, block{Kind: "think"})
		return
	}
	for _, m := range markers {
		if rest, ok := strings.CutPrefix(s, m.prefix); ok {
			b := block{Kind: m.kind, Text: rest}
			if m.kind == "call" {
				b.Call = p.calls
				p.calls++
			}
			p.blocks = append(p.blocks, b)
			return
		}
	}
	n := len(p.blocks)
	switch {
	case n == 0:
		p.blocks = append(p.blocks, block{Kind: "info", Text: s})
	case p.blocks[n-1].Kind == "call":
		b := &p.blocks[n-1]
		if b.Out != "" || strings.HasSuffix(b.Text, ")") {
			b.Out += s + "\n"
		} else {
			b.Text += "\n" + s // the call's arguments go on
		}
	default:
		p.appendText(s)
	}
}

func (p *chatParser) appendText(s string) {
	b := &p.blocks[len(p.blocks)-1]
	if b.Kind == "think" && b.Text == "" {
		b.Text = s
		return
	}
	b.Text += "\n" + s
}
