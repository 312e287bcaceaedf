package backend

import (
	"github.com/anthropics/anthropic-sdk-go/v2"
)

// anthropicDecoder turns Messages stream events into events. Content
// blocks are numbered; a tool_use block's input arrives as pieces of
// JSON and is complete at its content_block_stop.
type anthropicDecoder struct {
	a       *assembler
	blocks  map[int64]*anthropicBlock
	usage   Usage
	stop    StopReason
	stopped bool // message_stop seen
}

type anthropicBlock struct {
	typ, id, name string
	input         []byte
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
	case "content_block_start":
		cb := &ev.ContentBlock
		if d.blocks == nil {
			d.blocks = map[int64]*anthropicBlock{}
		}
		d.blocks[ev.Index] = &anthropicBlock{typ: cb.Type, id: cb.ID, name: cb.Name}
		if cb.Type == "text" {
			return d.a.addText(cb.Text)
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			return d.a.addText(ev.Delta.Text)
		case "thinking_delta":
			return d.a.addThinking(ev.Delta.Thinking)
		case "input_json_delta":
			if b := d.blocks[ev.Index]; b != nil {
				b.input = append(b.input, ev.Delta.PartialJSON...)
			}
		}
	case "content_block_stop":
		if b := d.blocks[ev.Index]; b != nil && b.typ == "tool_use" {
			delete(d.blocks, ev.Index)
			return d.a.addCall(b.id, b.name, b.input)
		}
	case "message_delta":
		d.stop = anthropicStop(string(ev.Delta.StopReason))
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
