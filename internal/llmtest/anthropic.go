package llmtest

import (
	"fmt"
	"net/http"
)

// The Anthropic Messages stream: named server-sent events. message_start
// carries the input usage; each content block (thinking, text, tool_use)
// is content_block_start, deltas (thinking_delta and signature_delta,
// text_delta, input_json_delta), content_block_stop; message_delta
// carries the stop reason and output usage; message_stop ends it. A ping
// may come anywhere.
var anthropicDialect = &dialect{
	name:        "anthropic",
	contentType: "text/event-stream; charset=utf-8",
	render:      renderAnthropic,
	errorBody:   anthropicError,
	streamError: []byte("event: error\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_llmtest"}` + "\n\n"),
	models:      anthropicModels,
}

func renderAnthropic(st *stream, t *Turn, req *Request, seq int) {
	ev := func(name, data string) {
		st.send([]byte("event: " + name + "\ndata: " + data + "\n\n"))
	}
	u := t.usage(req)
	ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_llmtest%d","type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`,
		seq, jsonString(req.Model), u.Input, u.CacheWrite, u.CacheRead))
	index := 0
	block := func(start, deltaType, field string, parts []string, extra ...string) {
		ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, index, start))
		if index == 0 {
			ev("ping", `{"type": "ping"}`)
		}
		for _, p := range parts {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":%q,%q:%s}}`, index, deltaType, field, jsonString(p)))
		}
		for _, e := range extra {
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, index, e))
		}
		ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index))
		index++
	}
	if t.Thinking != "" {
		block(`{"type":"thinking","thinking":"","signature":""}`, "thinking_delta", "thinking", pieces(t.Thinking, st.chunk),
			`{"type":"signature_delta","signature":"c2lnbmF0dXJlLWxsbXRlc3Q="}`)
	}
	if t.Text != "" || len(t.Calls) == 0 {
		block(`{"type":"text","text":""}`, "text_delta", "text", pieces(t.Text, st.chunk))
	}
	for i, c := range t.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_llmtest%d_%d", seq, i)
		}
		// The first input_json_delta is empty, as the real API sends it.
		parts := append([]string{""}, pieces(string(c.Args), st.chunk)...)
		block(fmt.Sprintf(`{"type":"tool_use","id":%s,"name":%s,"input":{}}`, jsonString(id), jsonString(c.Name)),
			"input_json_delta", "partial_json", parts)
	}
	stop := "end_turn"
	switch {
	case t.Stop == "max_tokens", t.Stop == "refusal":
		stop = t.Stop
	case len(t.Calls) > 0:
		stop = "tool_use"
	}
	ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, u.Output))
	ev("message_stop", `{"type":"message_stop"}`)
}

func anthropicError(status int, why failure) []byte {
	typ, msg := "invalid_request_error", "messages: field required"
	switch why {
	case failAuth:
		typ, msg = "authentication_error", "invalid x-api-key"
	case failRate:
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later."
	case failServer:
		typ, msg = "api_error", "Internal server error"
		if status == 529 {
			typ, msg = "overloaded_error", "Overloaded"
		}
	case failOverflow:
		msg = "prompt is too long: 210000 tokens > 200000 maximum"
	}
	return fmt.Appendf(nil, `{"type":"error","error":{"type":%q,"message":%s},"request_id":"req_llmtest"}`, typ, jsonString(msg))
}

func anthropicModel(m Model) string {
	return fmt.Sprintf(`{"type":"model","id":%s,"display_name":%s,"created_at":"2025-01-01T00:00:00Z","max_input_tokens":%d,"max_tokens":8192}`,
		jsonString(m.ID), jsonString(m.ID), m.Context)
}

func anthropicModels(models []Model, id string, _ []byte) ([]byte, int) {
	if id != "" {
		for _, m := range models {
			if m.ID == id {
				return []byte(anthropicModel(m)), http.StatusOK
			}
		}
		return fmt.Appendf(nil, `{"type":"error","error":{"type":"not_found_error","message":%s},"request_id":"req_llmtest"}`,
			jsonString("model: "+id)), http.StatusNotFound
	}
	b := []byte(`{"data":[`)
	for i, m := range models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, anthropicModel(m)...)
	}
	return fmt.Appendf(b, `],"has_more":false,"first_id":%s,"last_id":%s}`,
		jsonString(models[0].ID), jsonString(models[len(models)-1].ID)), http.StatusOK
}
