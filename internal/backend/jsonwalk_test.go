package backend

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// parseOpenAIChunkGJSON is parseOpenAIChunk as it was written with gjson
// alone (validate, then walk each object with gjson): the oracle the
// one-pass walk is fuzzed against (FuzzOpenAIChunkWalk).
func parseOpenAIChunkGJSON(data []byte, c *openaiChunk) (isNot string) {
	if !gjson.ValidBytes(data) {
		return "not JSON"
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return "not a chunk"
	}
	c.Choices = c.one[:0]
	fields(root, func(k string, v gjson.Result) {
		switch k {
		case "model":
			c.Model = str(v)
		case "usage":
			if v.IsObject() {
				c.Usage = &openaiUsage{
					PromptTokens:     v.Get("prompt_tokens").Int(),
					CompletionTokens: v.Get("completion_tokens").Int(),
					CachedTokens:     v.Get("prompt_tokens_details.cached_tokens").Int(),
					CacheWriteTokens: v.Get("prompt_tokens_details.cache_write_tokens").Int(),
					Cost:             v.Get("cost"),
				}
			}
		case "choices":
			elems(v, func(ch gjson.Result) { c.Choices = append(c.Choices, gjsonChoiceOf(ch)) })
		}
	})
	return ""
}

func gjsonChoiceOf(v gjson.Result) openaiChoice {
	var ch openaiChoice
	fields(v, func(k string, f gjson.Result) {
		switch k {
		case "index":
			ch.Index = f.Int()
		case "delta":
			ch.Delta = gjsonDeltaOf(f)
		case "finish_reason":
			ch.FinishReason = str(f)
		}
	})
	return ch
}

func gjsonDeltaOf(v gjson.Result) openaiDelta {
	var d openaiDelta
	fields(v, func(k string, f gjson.Result) {
		switch k {
		case "content":
			d.Content = str(f)
		case "refusal":
			d.Refusal = str(f)
		case "reasoning_content":
			d.ReasoningContent = f
		case "reasoning":
			d.Reasoning = f
		case "tool_calls":
			elems(f, func(tc gjson.Result) { d.ToolCalls = append(d.ToolCalls, gjsonToolDeltaOf(tc)) })
		}
	})
	return d
}

func gjsonToolDeltaOf(v gjson.Result) openaiToolDelta {
	var t openaiToolDelta
	fields(v, func(k string, f gjson.Result) {
		switch k {
		case "index":
			t.Index = f.Int()
		case "id":
			t.ID = str(f)
		case "function":
			fields(f, func(k string, g gjson.Result) {
				switch k {
				case "name":
					t.Name = str(g)
				case "arguments":
					t.Arguments = str(g)
				}
			})
		}
	})
	return t
}

// FuzzOpenAIChunkWalk checks that the one-pass walk reads every event as
// gjson did: the same verdict on whether it is JSON and a chunk, and the
// same fields.
func FuzzOpenAIChunkWalk(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi \"x\"\n"},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"execute_code","arguments":"{\"st"}}]}}]}`,
		`{"choices":[{"delta":{"reasoning_content":"think","reasoning":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4},"cost":0.5}}`,
		`{"choices":[],"usage":{"prompt_tokens":1e2,"completion_tokens":-0.5E+1}}`,
		`{"error":{"message":"overloaded"}}`, `{"choices":[{"error":1}],"\u0065rror":null}`,
		`{"model":"m","model":7,"choices":null,"choices":"x","choices":[1,"a",[],{}]}`,
		`{"choices":[{"index":"3","delta":{"content":null,"refusal":"no","tool_calls":null}}]}`,
		`{"\u0063hoices":[{"delta":{"con\u0074ent":"\ud83d\ude00 \ud800 \u0000"}}]}`,
		` {"a":[true,false,null,{"b":{}}]} `, `[1]`, `"x"`, `12`, `nul`, `{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":-}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{"a":1.}`, `{"a":1e}`, `{"a":[1,]}`, `{"a":[,1]}`, `{}`, ``, ` `, `{"a":tru}`, `{"a":1}x`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want openaiChunk
		gotNot, wantNot := parseOpenAIChunk(data, &got), parseOpenAIChunkGJSON(data, &want)
		if gotNot == "not JSON" && wantNot != gotNot && bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > maxDepth {
			return // nested deeper than the walk takes (maxDepth), which gjson has no bound for
		}
		if gotNot != wantNot {
			t.Fatalf("%q: walk says %q, gjson %q", data, gotNot, wantNot)
		}
		if gotNot != "" {
			return
		}
		if gjson.ValidBytes(data) != true {
			t.Fatalf("%q: taken, but not valid", data)
		}
		norm := func(c *openaiChunk) {
			c.one = [1]openaiChoice{}
			if len(c.Choices) == 0 {
				c.Choices = nil
			}
			for i := range c.Choices {
				d := &c.Choices[i].Delta
				d.ReasoningContent.Index, d.Reasoning.Index = 0, 0
			}
			if c.Usage != nil {
				c.Usage.Cost.Index = 0
			}
		}
		if has := gjson.GetBytes(data, "error").Exists(); got.errorKey != has {
			t.Fatalf("%q: walk says error key %v, gjson %v", data, got.errorKey, has)
		}
		got.errorKey = false
		norm(&got)
		norm(&want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nwalk  %+v\ngjson %+v", data, got, want)
		}
	})
}

// parseAnthropicEventGJSON is parseAnthropicEvent as it was written with
// gjson alone: the oracle of FuzzAnthropicEventWalk.
func parseAnthropicEventGJSON(data []byte, ev *anthropicEvent) bool {
	if !gjson.ValidBytes(data) {
		return false
	}
	fields(gjson.ParseBytes(data), func(k string, v gjson.Result) {
		switch k {
		case "type":
			ev.typ = nil
			if s := str(v); s != "" {
				ev.typ = []byte(s)
			}
		case "index":
			ev.index = v.Int()
		case "message":
			ev.message = v
		case "content_block":
			ev.block = v
		case "delta":
			ev.delta = []byte(v.Raw)
		case "usage":
			ev.usage = v
		}
	})
	return true
}

// FuzzAnthropicEventWalk checks that the one-pass walk reads every
// Anthropic event as gjson did.
func FuzzAnthropicEventWalk(f *testing.F) {
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \"x\""}}`,
		`{"type":"message_start","message":{"id":"m","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`,
		`{"type":"content_block_start","index":"1","content_block":{"type":"tool_use","id":"t","name":"execute_code","input":{}}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":7,"index":1.5,"index":-3,"delta":null,"usage":[1]}`, `[]`, `"x"`, `{"type":"a",}`, ``, `{"\u0074ype":"ping"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want anthropicEvent
		gotOK, wantOK := parseAnthropicEvent(data, &got), parseAnthropicEventGJSON(data, &want)
		if !gotOK && wantOK && bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > maxDepth {
			return // as in FuzzOpenAIChunkWalk
		}
		if gotOK != wantOK {
			t.Fatalf("%q: walk says JSON %v, gjson %v", data, gotOK, wantOK)
		}
		if !gotOK {
			return
		}
		for _, ev := range []*anthropicEvent{&got, &want} {
			if len(ev.typ) == 0 {
				ev.typ = nil
			}
			ev.message.Index, ev.block.Index, ev.usage.Index = 0, 0, 0
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nwalk  %+v\ngjson %+v", data, got, want)
		}
	})
}

// TestDeepEvent: an event nested deeper than maxDepth is an error of the
// stream, not a stack overflow that kills the daemon (the walk recurses),
// for both decoders, with an "error" key in it or not.
func TestDeepEvent(t *testing.T) {
	req := &Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}
	for _, open := range []string{"[", `{"a":`, `{"choices":[{"delta":`} {
		for _, tail := range []string{"", `"error"`} {
			data := []byte(strings.Repeat(open, 16<<20/len(open)) + tail)
			oa := openaiDecoder{a: newAssembler(context.Background(), "o", req, "m", nil)}
			if err := oa.event(data); err == nil || !strings.Contains(err.Error(), "not JSON") {
				t.Errorf("OpenAI, %q × %d + %q: %v", open, 16<<20/len(open), tail, err)
			}
			an := anthropicDecoder{a: newAssembler(context.Background(), "a", req, "m", nil)}
			if err := an.event(data, nil); err == nil || !strings.Contains(err.Error(), "not JSON") {
				t.Errorf("Anthropic, %q × %d + %q: %v", open, 16<<20/len(open), tail, err)
			}
		}
	}
	// At the bound, still JSON.
	ok := []byte(`{"choices":[{"delta":{"content":"x"},"x":` + strings.Repeat("[", maxDepth-3) + strings.Repeat("]", maxDepth-3) + `}]}`)
	var c openaiChunk
	if isNot := parseOpenAIChunk(ok, &c); isNot != "" || len(c.Choices) != 1 || c.Choices[0].Delta.Content != "x" {
		t.Errorf("nested %d deep: %q %+v", maxDepth, isNot, c)
	}
}

// elems calls f with each element of v, an array; nothing for any other
// value: the oracles' walk of an array, as the decoder had it. (gjson's ForEach passes any other value as one element: a
// server's "tool_calls": null, sent with every piece of text, was once
// taken for a call.)
func elems(v gjson.Result, f func(gjson.Result)) {
	if v.IsArray() {
		v.ForEach(func(_, x gjson.Result) bool { f(x); return true })
	}
}
