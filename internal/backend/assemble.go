package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// An assembler collects the pieces of a streamed response into a Reply
// and passes each piece to the caller's callback as an Event. Every
// backend's stream decoder feeds one.
type assembler struct {
	ctx  context.Context
	name string // the backend's
	fn   func(Event) error
	req  *Request
	text strings.Builder
	// refusal collects OpenAI's delta.refusal, which comes instead of
	// content when the model declines.
	refusal strings.Builder
	// thinking collects reasoning that comes unsigned (DeepSeek, Ollama,
	// OpenRouter ...), kept in the message for the APIs that want it back.
	thinking strings.Builder
	reply    Reply
	usage    bool // the server reported usage
	// batch is set by a decoder while more of the stream is already read:
	// then pieces of text of one kind are held and passed on as one
	// event, at the first piece read while batch is clear, at an event
	// of another kind or once maxHeld is held. A piece never waits for
	// the network.
	batch    bool
	heldKind EventKind
	held     strings.Builder
}

func newAssembler(ctx context.Context, name string, req *Request, model string, fn func(Event) error) *assembler {
	a := &assembler{ctx: ctx, name: name, fn: fn, req: req}
	a.reply.Message.Role = RoleAssistant
	a.reply.Model = model
	return a
}

// emit passes an event to the callback. Once the context is done no
// event is passed, even if the rest of the response is already read.
func (a *assembler) emit(e Event) error {
	if err := a.flush(); err != nil {
		return err
	}
	return a.pass(e)
}

// maxHeld bounds the text held for a batch: past it, the text goes on
// even though more of the stream is read. A decoder that stays behind a
// fast server always finds more read, and held the text until it caught
// up: a burst read whole went on in events of 17 KB in process
// (TestOpenAIBurstHeldAtMost), and a follower of chat would wait as
// long. 4 KiB is under a millisecond of a fast stream, and 256 writes of
// chat a MiB.
const maxHeld = 4 << 10

// piece passes on a piece of text of kind k, or holds it (see batch).
func (a *assembler) piece(k EventKind, s string) error {
	if a.held.Len() > 0 && a.heldKind != k {
		if err := a.flush(); err != nil {
			return err
		}
	}
	if a.batch || a.held.Len() > 0 {
		a.heldKind = k
		writeDoubling(&a.held, s)
		if a.batch && a.held.Len() < maxHeld {
			return nil
		}
		return a.flush()
	}
	return a.pass(Event{Kind: k, Text: s})
}

// writeDoubling appends s to b, doubling b's room when it is short:
// WriteString alone grows a large buffer by a quarter at a time, so a
// reply of 1 MiB in pieces of 64 bytes was copied over some five times.
// (Grow makes room for twice what b holds, plus s, and does not clear it.)
func writeDoubling(b *strings.Builder, s string) {
	if b.Cap()-b.Len() < len(s) {
		b.Grow(len(s))
	}
	b.WriteString(s)
}

// flush passes on the text held.
func (a *assembler) flush() error {
	if a.held.Len() == 0 {
		return nil
	}
	e := Event{Kind: a.heldKind, Text: a.held.String()}
	a.held.Reset()
	return a.pass(e)
}

func (a *assembler) pass(e Event) error {
	if err := a.ctx.Err(); err != nil {
		return transportError(a.name, a.ctx, err)
	}
	if a.fn == nil {
		return nil
	}
	return a.fn(e)
}

func (a *assembler) addText(s string) error {
	if s == "" {
		return nil
	}
	writeDoubling(&a.text, s)
	return a.piece(EventText, s)
}

func (a *assembler) addThinking(s string) error {
	if s == "" {
		return nil
	}
	writeDoubling(&a.thinking, s)
	return a.piece(EventThinking, s)
}

func (a *assembler) addRefusal(s string) error {
	if s == "" {
		return nil
	}
	writeDoubling(&a.refusal, s)
	return a.piece(EventRefusal, s)
}

// addSigned keeps a reasoning block the provider wants back unchanged.
func (a *assembler) addSigned(t Thinking) {
	a.reply.Message.Thinking = append(a.reply.Message.Thinking, t)
}

// setCost records a cost the backend knows better than the price table.
func (a *assembler) setCost(usd float64, src CostSource) {
	a.reply.Cost, a.reply.Priced = usd, src
}

// addCall adds a complete tool call, giving it an id if the server gave
// none (Ollama) and normalizing its arguments.
func (a *assembler) addCall(id, name string, args []byte) error {
	calls := a.reply.Message.Calls
	if id == "" {
		id = "call_" + strconv.Itoa(len(calls)+1)
	}
	c := ToolCall{ID: id, Name: name, Args: normArgs(args)}
	a.reply.Message.Calls = append(calls, c)
	return a.emit(Event{Kind: EventToolCall, Call: c})
}

// setUsage records usage the server reported.
func (a *assembler) setUsage(u Usage) {
	a.reply.Usage = u
	a.usage = true
}

// partial returns what arrived so far, for an error return, after
// passing on the text held.
func (a *assembler) partial() *Reply {
	a.flush()
	a.reply.Message.Text = a.text.String() + a.refusal.String()
	if a.refusal.Len() > 0 {
		a.reply.Message.Refused = true
	}
	r := a.reply
	return &r
}

// finish completes the reply: estimates usage the server did not report
// and sends the usage event.
func (a *assembler) finish(stop StopReason) (*Reply, error) {
	r := a.partial()
	r.Stop = stop
	if len(r.Message.Calls) > 0 && stop == StopEnd {
		// Ollama and some OpenAI-compatible servers say "stop" after
		// tool calls; what the caller must do next is run them.
		r.Stop = StopToolUse
	}
	if r.Message.Refused && r.Stop == StopEnd {
		// OpenAI ends a refusal with "stop".
		r.Stop = StopRefused
	}
	r.Message.Refused = r.Message.Refused || r.Stop == StopRefused
	if len(r.Message.Thinking) == 0 && a.thinking.Len() > 0 {
		// Unsigned: never sent to Anthropic; DeepSeek and Ollama get it
		// back (see their backends).
		r.Message.Thinking = []Thinking{{Text: a.thinking.String()}}
	}
	if !a.usage {
		r.Usage = Usage{Input: EstimateRequest(a.req), Output: estimateMessage(&r.Message), Estimated: true}
	}
	a.reply = *r
	if err := a.emit(Event{Kind: EventUsage, Usage: r.Usage}); err != nil {
		return r, err
	}
	return r, nil
}

// normArgs makes tool arguments valid JSON (see ToolCall.Args).
func normArgs(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(raw) {
		return bytes.Clone(raw)
	}
	b, _ := json.Marshal(string(raw))
	return b
}
