package backend

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/gjson"
)

// sdkAnthropicDecoder is the decoder ollie had while it linked the SDK,
// reading the events the SDK decoded: the oracle of FuzzAnthropicAsTheSDK.
// What it read of the SDK's types is here; what it read of the raw JSON
// even then (a message given whole in message_start) and what it did at
// a block's end are ollie's decoder's own, which it embeds.
type sdkAnthropicDecoder struct {
	anthropicDecoder
}

func (d *sdkAnthropicDecoder) event(ev *anthropic.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		d.usage = Usage{Input: int(u.InputTokens), Output: int(u.OutputTokens),
			CacheRead: int(u.CacheReadInputTokens), CacheWrite: int(u.CacheCreationInputTokens)}
		d.a.setUsage(d.usage)
		if ev.Message.Model != "" {
			d.a.reply.Model = string(ev.Message.Model)
		}
		return d.messageStart(gjson.Get(ev.RawJSON(), "message"))
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

func (d *sdkAnthropicDecoder) blockStart(index int64, cb *anthropic.ContentBlockStartEventContentBlockUnion) error {
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

func (d *sdkAnthropicDecoder) delta(ev *anthropic.MessageStreamEventUnion) error {
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

// FuzzAnthropicAsTheSDK: any sequence of events (one per line) makes the
// same reply, or the same failure, read by ollie's decoder as read by the
// one that took the events the SDK decoded. Events the SDK cannot decode
// end its stream; the input ends there for both.
func FuzzAnthropicAsTheSDK(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "anthropic_*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var events [][]byte
		r := newSSEReader(bytes.NewReader(b))
		for {
			data, err := r.next()
			if err != nil {
				break
			}
			events = append(events, append([]byte(nil), data...))
		}
		f.Add(bytes.Join(events, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		req := &Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}
		ours := anthropicDecoder{a: newAssembler(ctx, "a", req, "m", nil)}
		sdk := sdkAnthropicDecoder{anthropicDecoder{a: newAssembler(ctx, "a", req, "m", nil)}}
		var oursErr, sdkErr error
		for _, line := range bytes.Split(data, []byte("\n")) {
			var ev anthropic.MessageStreamEventUnion
			if ev.UnmarshalJSON(line) != nil || ev.Type == "error" {
				return // the SDK's stream ends in an error here; ollie's replay tests check those
			}
			if ev.Type == "ping" {
				continue
			}
			if !gjson.ValidBytes(line) || duplicateKeys(gjson.ParseBytes(line)) || !wellTyped(gjson.ParseBytes(line)) {
				// Which of two equal keys counts, JSON does not say, and the
				// SDK takes the first "type" but the last of the others;
				// ollie takes the last of each, as encoding/json does. And
				// a field of another type than the API's the SDK coerces
				// (an object for a model name becomes its JSON text), where
				// ollie takes it for absent.
				return
			}
			oursErr = ours.event(line, nil)
			sdkErr = sdk.event(&ev)
			if (oursErr == nil) != (sdkErr == nil) {
				t.Fatalf("event %s: ollie's error %v, the SDK's %v", line, oursErr, sdkErr)
			}
			if oursErr != nil {
				return
			}
		}
		if ours.stopped != sdk.stopped || ours.stop != sdk.stop || ours.usage != sdk.usage {
			t.Fatalf("ollie stopped %v (%v, %+v), the SDK %v (%v, %+v)", ours.stopped, ours.stop, ours.usage, sdk.stopped, sdk.stop, sdk.usage)
		}
		a, b := ours.a.partial(), sdk.a.partial()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("ollie's reply %+v\nthe SDK's %+v", a, b)
		}
	})
}

// duplicateKeys says whether an object in v has a key twice.
func duplicateKeys(v gjson.Result) bool {
	dup := false
	if v.IsObject() {
		seen := map[string]bool{}
		v.ForEach(func(k, x gjson.Result) bool {
			dup = seen[k.Str] || duplicateKeys(x)
			seen[k.Str] = true
			return !dup
		})
	} else if v.IsArray() {
		v.ForEach(func(_, x gjson.Result) bool {
			dup = duplicateKeys(x)
			return !dup
		})
	}
	return dup
}

// TestAnthropicDuplicateKeys: of two equal keys in an event, the last
// counts, as in encoding/json (the input FuzzAnthropicAsTheSDK found).
func TestAnthropicDuplicateKeys(t *testing.T) {
	req := &Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}
	d := anthropicDecoder{a: newAssembler(context.Background(), "a", req, "m", nil)}
	ev := []byte(`{"type":"message_start","type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":4}}`)
	if !duplicateKeys(gjson.ParseBytes(ev)) {
		t.Fatal("duplicateKeys missed the two types")
	}
	if err := d.event(ev, nil); err != nil || d.stop != StopRefused || d.usage.Output != 4 {
		t.Errorf("stop %q, usage %+v, %v: want the message_delta read", d.stop, d.usage, err)
	}
}

// wellTyped says whether every field the decoders read of an event has
// the API's type: strings, integers, objects.
func wellTyped(ev gjson.Result) bool {
	is := func(v gjson.Result, t gjson.Type) bool { return !v.Exists() || v.Type == t || v.Type == gjson.Null }
	integer := func(v gjson.Result) bool {
		return !v.Exists() || v.Type == gjson.Null || v.Type == gjson.Number && v.Num == float64(int64(v.Num)) && v.Num < 1<<53 && v.Num > -(1<<53)
	}
	obj := func(v gjson.Result) bool { return !v.Exists() || v.Type == gjson.Null || v.IsObject() }
	counts := func(u gjson.Result) bool {
		return obj(u) && integer(u.Get("input_tokens")) && integer(u.Get("output_tokens")) &&
			integer(u.Get("cache_read_input_tokens")) && integer(u.Get("cache_creation_input_tokens"))
	}
	strs := func(v gjson.Result, keys ...string) bool {
		for _, k := range keys {
			if !is(v.Get(k), gjson.String) {
				return false
			}
		}
		return true
	}
	m, cb, d := ev.Get("message"), ev.Get("content_block"), ev.Get("delta")
	return is(ev.Get("type"), gjson.String) && integer(ev.Get("index")) &&
		obj(m) && strs(m, "model", "stop_reason") && counts(m.Get("usage")) &&
		(!m.Get("content").Exists() || m.Get("content").IsArray()) &&
		obj(cb) && strs(cb, "type", "id", "name", "signature", "text", "thinking", "data") &&
		obj(d) && strs(d, "type", "text", "thinking", "signature", "partial_json", "stop_reason") &&
		obj(d.Get("stop_details")) && strs(d.Get("stop_details"), "explanation") &&
		counts(ev.Get("usage"))
}

// BenchmarkAnthropicEvent decodes the two events a Messages stream is
// mostly made of, in process: a piece of text, then a piece of a tool
// call's input.
func BenchmarkAnthropicEvent(b *testing.B) {
	start := []byte(`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"execute_code","input":{}}}`)
	events := map[string][]byte{
		"text": []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the"}}`),
		"call": []byte(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"lo"}}`),
	}
	for _, name := range []string{"text", "call"} {
		b.Run(name, func(b *testing.B) {
			req := &Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}
			d := anthropicDecoder{a: newAssembler(context.Background(), "a", req, "m", nil)}
			if err := d.event(start, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := d.event(events[name], nil); err != nil {
					b.Fatal(err)
				}
				if name == "call" && len(d.blocks[1].input) > 1<<20 {
					d.blocks[1].input = d.blocks[1].input[:0]
				}
			}
		})
	}
}
