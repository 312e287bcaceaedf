package backend

import (
	"bytes"
	"strconv"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/errs"
)

// openaiDecoder turns chat.completion.chunk objects into events. Text
// goes out as it comes; a tool call's arguments arrive in pieces under
// its index, so calls are sent whole when the response finishes.
type openaiDecoder struct {
	a      *assembler
	calls  []openaiCall // in order of first appearance
	finish string       // finish_reason, once seen
	c      openaiChunk  // the event being read; one for all, not one each
}

type openaiCall struct {
	index    int64
	id, name string
	args     []byte
}

// openaiChunk is what ollie reads of a chat.completion.chunk. The SDK's
// own decoding of a chunk costs many times what the text it carries
// does; this one is one pass over the event (jsonWalk), which checks
// that it is JSON and fills in just these fields.
type openaiChunk struct {
	Model   string
	Choices []openaiChoice
	Usage   *openaiUsage
	one     [1]openaiChoice // Choices' room for the one choice asked for
	// errorKey: the object has a key "error" (openaiDecoder.event).
	errorKey bool
}

type openaiChoice struct {
	Index        int64
	Delta        openaiDelta
	FinishReason string
}

type openaiUsage struct {
	PromptTokens, CompletionTokens int64
	CachedTokens, CacheWriteTokens int64 // under prompt_tokens_details
	Cost                           gjson.Result
}

type openaiDelta struct {
	Content, Refusal string
	// Reasoning, under the names vLLM, DeepSeek, GLM, llama.cpp
	// (reasoning_content) and OpenRouter, Ollama, newer vLLM (reasoning)
	// use. Kept as found, as a server may send null or another type.
	ReasoningContent, Reasoning gjson.Result
	ToolCalls                   []openaiToolDelta
}

type openaiToolDelta struct {
	Index           int64
	ID              string
	Name, Arguments string // under function
}

// next takes one event of the stream (streamDecoder): [DONE] ends it.
// Text that arrived while the last piece was passed on goes on as one
// piece (assembler.batch).
func (d *openaiDecoder) next(data, _ []byte, more bool) (bool, error) {
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		return true, nil
	}
	d.a.batch = more
	return false, d.event(data)
}

// end is the reply once the stream ended: the text held back for a
// batch goes out, then the calls, whole; a stream that ended before a
// finish_reason is an error.
func (d *openaiDecoder) end() (*Reply, error) {
	d.a.batch = false
	if err := d.a.flush(); err != nil {
		return d.a.partial(), err
	}
	if d.finish == "" {
		return d.a.partial(), streamCut(d.a.name)
	}
	if err := d.flushCalls(); err != nil {
		return d.a.partial(), err
	}
	return d.a.finish(openaiStop(d.finish))
}

func (d *openaiDecoder) partial() *Reply { return d.a.partial() }

// event decodes one event's data. An event that is not a JSON object is
// an error; a field of another type than the API's is taken as absent,
// as the SDK marks it invalid (FuzzOpenAIChunkAsTheSDK). A stream is
// mostly these events, each a few bytes of text, so each is read in
// one pass, into the decoder's one chunk.
//
// An object with an error in it is that error: a server that fails after
// it answered 200 says so in the stream. The pass notes an "error" key;
// an event that is not a chunk is looked at too, with gjson, which finds
// a key even in what is not JSON, as it did before the pass.
func (d *openaiDecoder) event(data []byte) error {
	c := &d.c
	*c = openaiChunk{}
	isNot := parseOpenAIChunk(data, c)
	if (isNot != "" || c.errorKey) && bytes.Contains(data, []byte(`"error"`)) {
		if r := gjson.GetBytes(data, "error"); r.Exists() {
			return classify(&APIError{Backend: d.a.name, Code: firstString(r, "code", "type"), Message: firstString(r, "message")})
		}
	}
	if isNot != "" {
		return errs.E(errs.Unavailable, "backend "+d.a.name+": stream event is "+isNot)
	}
	return d.chunk(c)
}

// parseOpenAIChunk fills in c from data, or says what data is instead
// of a chunk (then c is to be dropped). One pass over data (jsonWalk).
func parseOpenAIChunk(data []byte, c *openaiChunk) (isNot string) {
	w := jsonWalk{b: data}
	if w.peek() != '{' {
		w.skip()
		if !w.end() {
			return "not JSON"
		}
		return "not a chunk"
	}
	c.Choices = c.one[:0]
	w.object(func(k []byte) {
		switch string(k) {
		case "model":
			c.Model = w.str()
		case "usage":
			// Most chunks carry "usage": null, left to be skipped.
			if w.peek() != '{' {
				return
			}
			if v := w.result(); v.IsObject() {
				c.Usage = &openaiUsage{
					PromptTokens:     v.Get("prompt_tokens").Int(),
					CompletionTokens: v.Get("completion_tokens").Int(),
					CachedTokens:     v.Get("prompt_tokens_details.cached_tokens").Int(),
					CacheWriteTokens: v.Get("prompt_tokens_details.cache_write_tokens").Int(),
					Cost:             v.Get("cost"),
				}
			}
		case "choices":
			w.array(func() { c.Choices = append(c.Choices, openaiChoiceOf(&w)) })
		case "error":
			c.errorKey = true
		}
	})
	if !w.end() {
		return "not JSON"
	}
	return ""
}

func openaiChoiceOf(w *jsonWalk) openaiChoice {
	var ch openaiChoice
	w.object(func(k []byte) {
		switch string(k) {
		case "index":
			ch.Index = w.int()
		case "delta":
			ch.Delta = openaiDeltaOf(w)
		case "finish_reason":
			ch.FinishReason = w.str()
		}
	})
	return ch
}

func openaiDeltaOf(w *jsonWalk) openaiDelta {
	var d openaiDelta
	w.object(func(k []byte) {
		switch string(k) {
		case "content":
			d.Content = w.str()
		case "refusal":
			d.Refusal = w.str()
		case "reasoning_content":
			d.ReasoningContent = w.result()
		case "reasoning":
			d.Reasoning = w.result()
		case "tool_calls":
			w.array(func() { d.ToolCalls = append(d.ToolCalls, openaiToolDeltaOf(w)) })
		}
	})
	return d
}

func openaiToolDeltaOf(w *jsonWalk) openaiToolDelta {
	var t openaiToolDelta
	w.object(func(k []byte) {
		switch string(k) {
		case "index":
			t.Index = w.int()
		case "id":
			t.ID = w.str()
		case "function":
			w.object(func(k []byte) {
				switch string(k) {
				case "name":
					t.Name = w.str()
				case "arguments":
					t.Arguments = w.str()
				}
			})
		}
	})
	return t
}

// fields calls f with each key and value of v, an object; nothing for
// any other value. Each object is walked once, its keys switched on: a
// Get per field would walk it again from its start for each.
func fields(v gjson.Result, f func(key string, val gjson.Result)) {
	if v.IsObject() {
		v.ForEach(func(k, x gjson.Result) bool { f(k.Str, x); return true })
	}
}

// str is a JSON string's value, "" for any other type.
func str(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	return ""
}

func (d *openaiDecoder) chunk(c *openaiChunk) error {
	if u := c.Usage; u != nil {
		cached := int(u.CachedTokens)
		written := int(u.CacheWriteTokens)
		d.a.setUsage(Usage{
			// prompt_tokens counts the cached tokens too.
			Input:      max(0, int(u.PromptTokens)-cached-written),
			Output:     int(u.CompletionTokens),
			CacheRead:  cached,
			CacheWrite: written,
		})
		if u.Cost.Exists() {
			if usd, err := strconv.ParseFloat(u.Cost.Raw, 64); err == nil && usd >= 0 {
				d.a.setCost(usd, CostReported)
			}
		}
	}
	if c.Model != "" {
		d.a.reply.Model = c.Model
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // only one choice is ever asked for
		}
		if err := d.delta(&ch.Delta); err != nil {
			return err
		}
		if ch.FinishReason != "" {
			d.finish = ch.FinishReason
		}
	}
	return nil
}

func (d *openaiDecoder) delta(delta *openaiDelta) error {
	// A server that sends both sends the same text twice: the first is
	// taken.
	for _, r := range []gjson.Result{delta.ReasoningContent, delta.Reasoning} {
		if s := str(r); s != "" {
			if err := d.a.addThinking(s); err != nil {
				return err
			}
			break
		}
	}
	if err := d.a.addText(delta.Content); err != nil {
		return err
	}
	if err := d.a.addRefusal(delta.Refusal); err != nil {
		return err
	}
	for _, tc := range delta.ToolCalls {
		if tc.Index < 0 || tc.Index > 1024 {
			return errs.E(errs.Unavailable, "backend "+d.a.name+": tool call index "+strconv.FormatInt(tc.Index, 10)+" out of range")
		}
		c := d.call(tc.Index, tc.ID)
		if tc.ID != "" {
			c.id = tc.ID
		}
		if tc.Name != "" && c.name == "" {
			c.name = tc.Name
		}
		c.args = append(c.args, tc.Arguments...)
	}
	return nil
}

// call returns the call a tool-call delta continues. A delta with a new
// id at a used index starts another call: some servers number every
// parallel call 0.
func (d *openaiDecoder) call(index int64, id string) *openaiCall {
	for i := len(d.calls) - 1; i >= 0; i-- {
		c := &d.calls[i]
		if c.index == index {
			if id != "" && c.id != "" && id != c.id {
				break
			}
			return c
		}
	}
	d.calls = append(d.calls, openaiCall{index: index})
	return &d.calls[len(d.calls)-1]
}

func (d *openaiDecoder) flushCalls() error {
	for _, c := range d.calls {
		if err := d.a.addCall(c.id, c.name, c.args); err != nil {
			return err
		}
	}
	return nil
}
