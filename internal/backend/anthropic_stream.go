package backend

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/errs"
)

// anthropicDecoder turns Messages stream events into events. Content
// blocks are numbered; a tool_use block's input arrives as pieces of
// JSON and is complete at its content_block_stop. A thinking block's
// text and signature are kept whole, to be sent back unchanged.
type anthropicDecoder struct {
	a       *assembler
	blocks  map[int64]*anthropicBlock
	usage   Usage
	stop    StopReason
	stopped bool // message_stop seen
}

type anthropicBlock struct {
	typ, id, name string
	start         []byte // input given whole in content_block_start
	input         []byte // input_json_delta pieces
	thinking      bytes.Buffer
	signature     string
}

// anthropicEvent is the part of a stream event the decoder reads. delta
// is the raw object, in the event's data (valid while the event is
// taken): most events are a content_block_delta, read in one pass.
type anthropicEvent struct {
	typ                   []byte // in the event's data too
	index                 int64
	message, block, usage gjson.Result
	delta                 []byte
}

// next takes one event of the stream (streamDecoder). The stream goes
// on to its end after message_stop, as the SDK reads it.
func (d *anthropicDecoder) next(data, name []byte, _ bool) (bool, error) {
	return false, d.event(data, name)
}

// end is the reply once the stream ended: an error if it ended before
// message_stop.
func (d *anthropicDecoder) end() (*Reply, error) {
	if !d.stopped {
		return d.a.partial(), streamCut(d.a.name)
	}
	return d.a.finish(d.stop)
}

func (d *anthropicDecoder) partial() *Reply { return d.a.partial() }

// event takes the data of one server-sent event, named name.
func (d *anthropicDecoder) event(data, name []byte) error {
	if string(name) == "ping" {
		return nil
	}
	var ev anthropicEvent
	if !parseAnthropicEvent(data, &ev) {
		return errs.E(errs.Unavailable, "backend "+d.a.name+": stream event is not JSON")
	}
	if string(name) == "error" || string(ev.typ) == "error" {
		return classify(&APIError{Backend: d.a.name, Code: errorCode(data), Message: errorText(data)})
	}
	switch string(ev.typ) {
	case "message_start":
		d.usage = anthropicUsage(ev.message.Get("usage"))
		d.a.setUsage(d.usage)
		if m := str(ev.message.Get("model")); m != "" {
			d.a.reply.Model = m
		}
		return d.messageStart(ev.message)
	case "content_block_start":
		return d.blockStart(ev.index, ev.block)
	case "content_block_delta":
		return d.delta(ev.index, ev.delta)
	case "content_block_stop":
		return d.blockStop(ev.index)
	case "message_delta":
		return d.messageDelta(gjson.ParseBytes(ev.delta), ev.usage)
	case "message_stop":
		d.stopped = true
	}
	return nil
}

// parseAnthropicEvent fills in ev from data in one pass (jsonWalk), and
// reports whether data is JSON. Any JSON is an event: one that is not an
// object has no type, and is let go.
func parseAnthropicEvent(data []byte, ev *anthropicEvent) bool {
	w := jsonWalk{b: data}
	w.object(func(k []byte) {
		switch string(k) {
		case "type":
			ev.typ = w.strBytes()
		case "index":
			ev.index = w.int()
		case "message":
			ev.message = w.result()
		case "content_block":
			ev.block = w.result()
		case "delta":
			ev.delta = w.skip()
		case "usage":
			ev.usage = w.result()
		}
	})
	return w.end()
}

// messageDelta takes the stop reason and the usage so far.
func (d *anthropicDecoder) messageDelta(delta, usage gjson.Result) error {
	d.stop = anthropicStop(str(delta.Get("stop_reason")))
	if d.stop == StopRefused && d.a.text.Len() == 0 && d.a.refusal.Len() == 0 {
		// A refusal may come with no content at all; the reason is in
		// stop_details.
		if why := str(delta.Get("stop_details.explanation")); why != "" {
			if err := d.a.addRefusal(why); err != nil {
				return err
			}
		}
	}
	// The usage here is cumulative; newer servers repeat the input
	// counts in it, older ones send only output_tokens.
	u := anthropicUsage(usage)
	d.usage.Output = u.Output
	if u.Input > 0 {
		d.usage.Input = u.Input
	}
	if u.CacheRead > 0 {
		d.usage.CacheRead = u.CacheRead
	}
	if u.CacheWrite > 0 {
		d.usage.CacheWrite = u.CacheWrite
	}
	d.a.setUsage(d.usage)
	return nil
}

// anthropicUsage reads a usage object.
func anthropicUsage(v gjson.Result) Usage {
	var u Usage
	fields(v, func(k string, n gjson.Result) {
		switch k {
		case "input_tokens":
			u.Input = int(n.Int())
		case "output_tokens":
			u.Output = int(n.Int())
		case "cache_read_input_tokens":
			u.CacheRead = int(n.Int())
		case "cache_creation_input_tokens":
			u.CacheWrite = int(n.Int())
		}
	})
	return u
}

// messageStart takes what a message_start may already hold: a stop
// reason, and content blocks whole (a message continued after a server
// tool ran, where a tool_use is given in full and no delta follows).
func (d *anthropicDecoder) messageStart(msg gjson.Result) error {
	if r := msg.Get("stop_reason"); r.Type == gjson.String {
		d.stop = anthropicStop(r.Str)
	}
	var err error
	msg.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			err = d.a.addText(b.Get("text").Str)
		case "tool_use":
			in := []byte(b.Get("input").Raw)
			err = d.a.addCall(b.Get("id").Str, b.Get("name").Str, in)
		case "thinking":
			if sig := b.Get("signature").Str; sig != "" {
				d.a.addSigned(Thinking{Text: b.Get("thinking").Str, Signature: sig})
			}
			err = d.a.addThinking(b.Get("thinking").Str)
		case "redacted_thinking":
			d.a.addSigned(Thinking{Redacted: b.Get("data").Str})
		}
		return err == nil
	})
	return err
}

func (d *anthropicDecoder) blockStart(index int64, cb gjson.Result) error {
	if d.blocks == nil {
		d.blocks = map[int64]*anthropicBlock{}
	}
	b := &anthropicBlock{typ: str(cb.Get("type")), id: str(cb.Get("id")), name: str(cb.Get("name")), signature: str(cb.Get("signature"))}
	d.blocks[index] = b
	switch b.typ {
	case "text":
		return d.a.addText(str(cb.Get("text")))
	case "tool_use":
		// A call made by the code execution tool (programmatic tool
		// calling) carries its whole input here and may send no deltas.
		if in := cb.Get("input"); in.Exists() && in.Type != gjson.Null {
			b.start = []byte(in.Raw)
		}
	case "thinking":
		t := str(cb.Get("thinking"))
		b.thinking.WriteString(t)
		return d.a.addThinking(t)
	case "redacted_thinking":
		d.a.addSigned(Thinking{Redacted: str(cb.Get("data"))})
	}
	return nil
}

func (d *anthropicDecoder) delta(index int64, delta []byte) error {
	b := d.blocks[index]
	var typ, partial []byte
	var text string
	w := jsonWalk{b: delta}
	w.object(func(k []byte) {
		switch string(k) {
		case "type":
			typ = w.strBytes()
		case "text", "thinking", "signature":
			text = w.str()
		case "partial_json":
			partial = w.strBytes()
		}
	})
	switch string(typ) {
	case "text_delta":
		return d.a.addText(text)
	case "thinking_delta":
		if b != nil {
			b.thinking.WriteString(text)
		}
		return d.a.addThinking(text)
	case "signature_delta":
		if b != nil {
			b.signature += text
		}
	case "input_json_delta":
		if b != nil {
			b.input = append(b.input, partial...)
		}
	}
	return nil
}

func (d *anthropicDecoder) blockStop(index int64) error {
	b := d.blocks[index]
	if b == nil {
		return nil
	}
	delete(d.blocks, index)
	switch b.typ {
	case "tool_use":
		return d.a.addCall(b.id, b.name, mergeInput(b.start, b.input))
	case "thinking":
		// Only a signed block can go back; the API signs every one.
		if b.signature != "" {
			d.a.addSigned(Thinking{Text: b.thinking.String(), Signature: b.signature})
		}
	}
	return nil
}

// mergeInput joins a tool_use input given in content_block_start with the
// one streamed in deltas. Normally the start holds {} and the deltas the
// whole object; a programmatic call has it all in the start. When both
// hold keys, those of the deltas win.
func mergeInput(start, deltas []byte) []byte {
	start, deltas = bytes.TrimSpace(start), bytes.TrimSpace(deltas)
	if len(deltas) == 0 {
		return start
	}
	var s, d map[string]json.RawMessage
	if len(start) == 0 || json.Unmarshal(start, &s) != nil || len(s) == 0 || json.Unmarshal(deltas, &d) != nil {
		return deltas
	}
	if len(d) == 0 {
		return start
	}
	for k, v := range d {
		s[k] = v
	}
	out, err := json.Marshal(s)
	if err != nil {
		return deltas
	}
	return out
}

func anthropicStop(r string) StopReason {
	switch r {
	case "end_turn", "stop_sequence":
		return StopEnd
	case "tool_use":
		return StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "refusal":
		return StopRefused
	}
	return StopOther
}
