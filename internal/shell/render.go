package shell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// A renderer turns a session's chat, fed in arbitrary pieces as it
// grows, into what the shell shows: the assistant's text streamed as it
// arrives, tool calls on one line each, the first lines of their output,
// info and errors set apart.
//
// chat is line-oriented: a line starts with "user: ", "assistant: ",
// "-> " (a tool call), ":: " (info) or "error: ", or else continues the
// block before it (the rest of a reply, a tool's output). A line's kind
// is only known once its start has arrived, so the renderer holds back
// the first few bytes of each line; the rest of a reply's line is written
// at once.
type renderer struct {
	w     io.Writer
	color bool
	width func() int // terminal columns; nil or 0: 80

	// maxOutput is how many lines of a tool's output are shown.
	maxOutput int
	// skip is set when this shell just wrote a prompt: its user block,
	// already on the screen, is not echoed back.
	skip bool

	kind    kind   // of the block being rendered
	head    []byte // the start of the current line, until its kind is known
	decided bool   // the current line's kind is known
	line    []byte // a whole line being gathered (all kinds but text)
	col     int    // bytes written on the terminal's current line
	shown   int    // output lines shown in the current tool block
	hidden  int    // output lines left out in it
	mute    bool   // in the block of the prompt being skipped
}

type kind int

const (
	kindNone kind = iota
	kindUser
	kindText // the assistant's reply
	kindCall
	kindOutput
	kindInfo
	kindError
)

var prefixes = []struct {
	p string
	k kind
}{
	{"user: ", kindUser},
	{"assistant: ", kindText},
	{"-> ", kindCall},
	{":: ", kindInfo},
	{"error: ", kindError},
}

const (
	dim    = "\x1b[2m"
	cyan   = "\x1b[36m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	reset  = "\x1b[0m"
)

func (r *renderer) Write(p []byte) (int, error) {
	for _, c := range p {
		r.byte(c)
	}
	return len(p), nil
}

func (r *renderer) byte(c byte) {
	if !r.decided {
		r.head = append(r.head, c)
		if c != '\n' && couldBePrefix(r.head) {
			return
		}
		r.decide()
		return
	}
	r.body(c)
}

// couldBePrefix reports whether more bytes may still make b a prefix.
func couldBePrefix(b []byte) bool {
	for _, p := range prefixes {
		if len(b) < len(p.p) && strings.HasPrefix(p.p, string(b)) {
			return true
		}
	}
	return false
}

// decide sets the kind of the line whose start is in head, then feeds the
// rest of head as body.
func (r *renderer) decide() {
	head := r.head
	r.head = nil
	r.decided = true
	k := kindNone
	for _, p := range prefixes {
		if bytes.HasPrefix(head, []byte(p.p)) {
			k, head = p.k, head[len(p.p):]
			break
		}
	}
	if k == kindNone {
		// A line of the block before: more reply, more output.
		k = r.kind
		if k == kindCall {
			k = kindOutput
		}
	} else {
		r.startBlock(k)
	}
	r.kind = k
	for _, c := range head {
		r.body(c)
	}
}

func (r *renderer) startBlock(k kind) {
	r.endOutput()
	r.mute = false
	if k == kindUser && r.skip {
		r.mute, r.skip = true, false
	}
	if k == kindCall {
		r.shown, r.hidden = 0, 0
	}
	if k == kindText {
		r.newline()
	}
}

// body takes one byte of the current line after its prefix.
func (r *renderer) body(c byte) {
	if r.kind == kindText && !r.mute {
		if c == '\n' {
			r.out("\n")
			r.decided = false
			return
		}
		r.out(string(c))
		return
	}
	if c != '\n' {
		r.line = append(r.line, c)
		return
	}
	line := string(r.line)
	r.line = r.line[:0]
	r.decided = false
	if !r.mute {
		r.show(line)
	}
}

// show writes a whole line of a kind other than the reply.
func (r *renderer) show(line string) {
	r.newline()
	switch r.kind {
	case kindUser:
		r.styled(dim, "» "+line)
	case kindCall:
		r.styled(cyan, "⚙ "+r.fit(summarizeCall(line), 2))
	case kindOutput:
		if r.shown >= r.maxOutput {
			r.hidden++
			return
		}
		r.shown++
		r.styled(dim, "  │ "+r.fit(line, 4))
	case kindInfo:
		r.styled(yellow, ":: "+line)
	case kindError:
		r.styled(red, "error: "+line)
	default:
		r.out(line + "\n")
	}
}

func (r *renderer) styled(style, s string) {
	if r.color {
		r.out(style + s + reset + "\n")
		return
	}
	r.out(s + "\n")
}

// endOutput closes a tool's output block: how many lines were left out.
func (r *renderer) endOutput() {
	if r.hidden > 0 {
		r.newline()
		r.styled(dim, fmt.Sprintf("  │ … %d more lines", r.hidden))
	}
	r.shown, r.hidden = 0, 0
}

// Flush ends the rendering of what has arrived: a partial line that is
// not a reply is shown as it is, and the cursor left at a line start.
func (r *renderer) Flush() {
	if !r.decided && len(r.head) > 0 {
		r.decide()
	}
	if r.decided && r.kind != kindText && len(r.line) > 0 {
		line := string(r.line)
		r.line = r.line[:0]
		if !r.mute {
			r.show(line)
		}
	}
	r.endOutput()
	r.newline()
}

// newline moves to the start of a line if the cursor is not there.
func (r *renderer) newline() {
	if r.col > 0 {
		r.out("\n")
	}
}

func (r *renderer) out(s string) {
	io.WriteString(r.w, s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		r.col = len(s) - i - 1
	} else {
		r.col += len(s)
	}
}

// fit cuts s to the terminal's width less indent, at a rune boundary.
func (r *renderer) fit(s string, indent int) string {
	w := 80
	if r.width != nil {
		if n := r.width(); n > 0 {
			w = n
		}
	}
	w -= indent
	if w < 10 {
		w = 10
	}
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	rs := []rune(s)
	return string(rs[:w-1]) + "…"
}

// summarizeCall turns a chat line "NAME({json})" into a compact form:
// each stage of an execute_code pipeline as "language: first line of
// code" or "tool args", joined by " | ".
func summarizeCall(line string) string {
	name, args, ok := strings.Cut(line, "(")
	if !ok || !strings.HasSuffix(args, ")") {
		return line
	}
	args = strings.TrimSuffix(args, ")")
	var call struct {
		Steps []json.RawMessage `json:"steps"`
	}
	if name != "execute_code" || json.Unmarshal([]byte(args), &call) != nil || len(call.Steps) == 0 {
		return line
	}
	parts := make([]string, 0, len(call.Steps))
	for _, s := range call.Steps {
		parts = append(parts, summarizeStage(s))
	}
	return strings.Join(parts, " | ")
}

func summarizeStage(raw json.RawMessage) string {
	var st struct {
		Code     string            `json:"code"`
		Language string            `json:"language"`
		Tool     string            `json:"tool"`
		Args     []string          `json:"args"`
		Parallel []json.RawMessage `json:"parallel"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return string(raw)
	}
	switch {
	case st.Tool != "":
		return strings.TrimSpace(st.Tool + " " + strings.Join(st.Args, " "))
	case len(st.Parallel) > 0:
		parts := make([]string, 0, len(st.Parallel))
		for _, p := range st.Parallel {
			parts = append(parts, summarizeStage(p))
		}
		return "{ " + strings.Join(parts, " & ") + " }"
	}
	code := strings.TrimSpace(st.Code)
	first, rest, _ := strings.Cut(code, "\n")
	if rest != "" {
		first += " …"
	}
	if st.Language == "" {
		return first
	}
	return st.Language + ": " + first
}
