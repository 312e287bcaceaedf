package backend

import (
	"encoding/json"
	"strconv"

	"ollie.dev/ollie/internal/errs"
)

// openaiDecoder turns chat.completion.chunk objects into events. Text
// goes out as it comes; a tool call's arguments arrive in pieces under
// its index, so calls are sent whole when the response finishes.
type openaiDecoder struct {
	a      *assembler
	calls  []openaiCall // in order of first appearance
	finish string       // finish_reason, once seen
}

type openaiCall struct {
	index    int64
	id, name string
	args     []byte
}

// openaiChunk is what ollie reads of a chat.completion.chunk. It is
// decoded with encoding/json into just these fields: the SDK's own
// decoding of a chunk costs many times more than the text it carries.
type openaiChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int64       `json:"index"`
		Delta        openaiDelta `json:"delta"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens     int64 `json:"cached_tokens"`
			CacheWriteTokens int64 `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
		// OpenRouter reports what the request cost, in USD.
		Cost json.RawMessage `json:"cost"`
	} `json:"usage"`
}

type openaiDelta struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// Reasoning, under the names vLLM, DeepSeek, GLM, llama.cpp
	// (reasoning_content) and OpenRouter, Ollama, newer vLLM (reasoning)
	// use. Raw, as a server may send null or another type.
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ToolCalls        []struct {
		Index    int64  `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// event decodes one event's data. An event that is not a chunk is an
// error, as it was to the SDK.
func (d *openaiDecoder) event(data []byte) error {
	var c openaiChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return errs.E(errs.Unavailable, "backend "+d.a.name+": stream event is not a chunk", err)
	}
	return d.chunk(&c)
}

func (d *openaiDecoder) chunk(c *openaiChunk) error {
	if u := c.Usage; u != nil {
		cached := int(u.PromptTokensDetails.CachedTokens)
		written := int(u.PromptTokensDetails.CacheWriteTokens)
		d.a.setUsage(Usage{
			// prompt_tokens counts the cached tokens too.
			Input:      max(0, int(u.PromptTokens)-cached-written),
			Output:     int(u.CompletionTokens),
			CacheRead:  cached,
			CacheWrite: written,
		})
		if len(u.Cost) > 0 {
			if usd, err := strconv.ParseFloat(string(u.Cost), 64); err == nil && usd >= 0 {
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
	for _, raw := range []json.RawMessage{delta.ReasoningContent, delta.Reasoning} {
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) == nil && s != "" {
				if err := d.a.addThinking(s); err != nil {
					return err
				}
				break
			}
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
		if tc.Function.Name != "" && c.name == "" {
			c.name = tc.Function.Name
		}
		c.args = append(c.args, tc.Function.Arguments...)
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
