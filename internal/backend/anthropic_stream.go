package backend

import (
	"bytes"
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"
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

func (d *anthropicDecoder) event(ev *anthropic.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		d.usage = Usage{Input: int(u.InputTokens), Output: int(u.OutputTokens),
			CacheRead: int(u.CacheReadInputTokens), CacheWrite: int(u.CacheCreationInputTokens)}
		d.a.setUsage(d.usage)
		if ev.Message.Model != "" {
			d.a.reply.Model = string(ev.Message.Model)
		}
		return d.messageStart(ev.RawJSON())
	case "content_block_start":
		return d.blockStart(ev.Index, &ev.ContentBlock)
	case "content_block_delta":
		return d.delta(ev)
	case "content_block_stop":
		return d.blockStop(ev.Index)
	case "message_delta":
		d.stop = anthropicStop(string(ev.Delta.StopReason))
		if d.stop == StopRefused && d.a.text.Len() == 0 && d.a.refusal.Len() == 0 {
			// A refusal may come with no content at all; the reason is in
			// stop_details.
			if why := gjson.Get(ev.RawJSON(), "delta.stop_details.explanation").Str; why != "" {
				if err := d.a.addRefusal(why); err != nil {
					return err
				}
			}
		}
		// The usage here is cumulative; newer servers repeat the input
		// counts in it, older ones send only output_tokens.
		u := ev.Usage
		d.usage.Output = int(u.OutputTokens)
		if u.InputTokens > 0 {
			d.usage.Input = int(u.InputTokens)
		}
		if u.CacheReadInputTokens > 0 {
			d.usage.CacheRead = int(u.CacheReadInputTokens)
		}
		if u.CacheCreationInputTokens > 0 {
			d.usage.CacheWrite = int(u.CacheCreationInputTokens)
		}
		d.a.setUsage(d.usage)
	case "message_stop":
		d.stopped = true
	}
	return nil
}

// messageStart takes what a message_start may already hold: a stop
// reason, and content blocks whole (a message continued after a server
// tool ran, where a tool_use is given in full and no delta follows).
func (d *anthropicDecoder) messageStart(raw string) error {
	msg := gjson.Get(raw, "message")
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

func (d *anthropicDecoder) blockStart(index int64, cb *anthropic.ContentBlockStartEventContentBlockUnion) error {
	if d.blocks == nil {
		d.blocks = map[int64]*anthropicBlock{}
	}
	b := &anthropicBlock{typ: cb.Type, id: cb.ID, name: cb.Name, signature: cb.Signature}
	d.blocks[index] = b
	switch cb.Type {
	case "text":
		return d.a.addText(cb.Text)
	case "tool_use":
		// A call made by the code execution tool (programmatic tool
		// calling) carries its whole input here and may send no deltas.
		if raw := cb.JSON.Input.Raw(); raw != "" && raw != "null" {
			b.start = []byte(raw)
		}
	case "thinking":
		b.thinking.WriteString(cb.Thinking)
		return d.a.addThinking(cb.Thinking)
	case "redacted_thinking":
		d.a.addSigned(Thinking{Redacted: cb.Data})
	}
	return nil
}

func (d *anthropicDecoder) delta(ev *anthropic.MessageStreamEventUnion) error {
	b := d.blocks[ev.Index]
	switch ev.Delta.Type {
	case "text_delta":
		return d.a.addText(ev.Delta.Text)
	case "thinking_delta":
		if b != nil {
			b.thinking.WriteString(ev.Delta.Thinking)
		}
		return d.a.addThinking(ev.Delta.Thinking)
	case "signature_delta":
		if b != nil {
			b.signature += ev.Delta.Signature
		}
	case "input_json_delta":
		if b != nil {
			b.input = append(b.input, ev.Delta.PartialJSON...)
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
