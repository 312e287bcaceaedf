package llmtest

import (
	"fmt"
	"net/http"
	"strconv"
)

// The OpenAI chat-completions stream: server-sent events whose data are
// chat.completion.chunk objects, ended by "data: [DONE]". Tool calls are
// announced with index, id and name, then their arguments follow in
// pieces; usage comes in a last chunk with no choices, and only when the
// request set stream_options.include_usage.
var openaiDialect = &dialect{
	name:        "openai",
	contentType: "text/event-stream; charset=utf-8",
	render:      renderOpenAI,
	errorBody:   openaiError,
	streamError: []byte(`data: {"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}` + "\n\n"),
	models:      openaiModels,
}

// created is the fixed timestamp of every response, so streams are
// reproducible byte for byte.
const created = 1735689600

func renderOpenAI(st *stream, t *Turn, req *Request, seq int) {
	usage := ""
	if req.IncludeUsage {
		// The real API sends "usage":null in every chunk but the last.
		usage = `,"usage":null`
	}
	head := fmt.Sprintf(`data: {"id":"chatcmpl-llmtest%d","object":"chat.completion.chunk","created":%d,"model":%s,"system_fingerprint":"fp_llmtest","choices":[`,
		seq, created, jsonString(req.Model))
	chunk := func(delta, finish string) {
		st.send(fmt.Appendf(nil, `%s{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]%s}`+"\n\n", head, delta, finish, usage))
	}
	chunk(`{"role":"assistant","content":"","refusal":null}`, "null")
	for _, p := range pieces(t.Thinking, st.chunk) {
		// The field vLLM, DeepSeek and llama.cpp use for reasoning.
		chunk(`{"reasoning_content":`+jsonString(p)+`}`, "null")
	}
	field := "content"
	if t.Stop == "refusal" {
		field = "refusal" // a refusal comes instead of content, ending with "stop"
	}
	for _, p := range pieces(t.Text, st.chunk) {
		chunk(`{"`+field+`":`+jsonString(p)+`}`, "null")
	}
	for i, c := range t.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_llmtest%d_%d", seq, i)
		}
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]}`,
			i, jsonString(id), jsonString(c.Name)), "null")
		for _, p := range pieces(string(c.Args), st.chunk) {
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, jsonString(p)), "null")
		}
	}
	finish := `"stop"`
	switch {
	case t.Stop == "max_tokens":
		finish = `"length"`
	case len(t.Calls) > 0:
		finish = `"tool_calls"`
	}
	chunk(`{}`, finish)
	if req.IncludeUsage {
		u := t.usage(req)
		prompt := u.Input + u.CacheRead + u.CacheWrite // prompt_tokens counts cached tokens too
		write := ""
		if u.CacheWrite > 0 {
			write = `,"cache_write_tokens":` + strconv.Itoa(u.CacheWrite)
		}
		st.send(fmt.Appendf(nil, `%s],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d,"audio_tokens":0%s},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`+"\n\n",
			head, prompt, u.Output, prompt+u.Output, u.CacheRead, write))
	}
	st.send([]byte("data: [DONE]\n\n"))
}

func openaiError(status int, why failure) []byte {
	msg, typ, code := "We could not parse the JSON body of your request.", "invalid_request_error", "null"
	switch why {
	case failAuth:
		// The real message quotes the key, masked; it is left out here so
		// that a test can assert a key never comes back.
		msg, code = "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.", `"invalid_api_key"`
	case failRate:
		msg, typ, code = "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.", "requests", `"rate_limit_exceeded"`
	case failServer:
		msg, typ = "The server had an error while processing your request. Sorry about that!", "server_error"
	case failOverflow:
		msg, code = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.", `"context_length_exceeded"`
	}
	param := "null"
	if why == failOverflow {
		param = `"messages"`
	}
	return fmt.Appendf(nil, `{"error":{"message":%s,"type":%s,"param":%s,"code":%s}}`+"\n", jsonString(msg), jsonString(typ), param, code)
}

func openaiModel(m Model) string {
	// max_model_len is where vLLM reports the context window.
	return fmt.Sprintf(`{"id":%s,"object":"model","created":%d,"owned_by":"llmtest","max_model_len":%d}`, jsonString(m.ID), created, m.Context)
}

func openaiModels(models []Model, id string, _ []byte) ([]byte, int) {
	if id != "" {
		for _, m := range models {
			if m.ID == id {
				return []byte(openaiModel(m)), http.StatusOK
			}
		}
		return fmt.Appendf(nil, `{"error":{"message":%s,"type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
			jsonString("The model '"+id+"' does not exist")), http.StatusNotFound
	}
	b := []byte(`{"object":"list","data":[`)
	for i, m := range models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, openaiModel(m)...)
	}
	return append(b, "]}"...), http.StatusOK
}
