package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/errs"
)

// Every backend builds its requests and reads its streams itself, with
// the JSON of the wire format in this package's own types. The official
// SDKs were the first choice (ARCHITECTURE.md) and stay as the oracle of
// the tests: a request ollie sends is the one the SDK sends
// (TestOpenAIRequestAsTheSDK, TestAnthropicRequestAsTheSDK), a stream
// reads as the SDK reads it (TestOpenAIStreamAsTheSDK,
// TestAnthropicStreamAsTheSDK). They are not linked into ollie, for a
// measured reason: their package initialisation alone took 3.3 ms and
// 0.4 MB of every start of every ollie process (the daemon and each CLI
// verb), of 5.3 ms in all, and made the binary 54.5 MB instead of 16.9
// (docs/bench.md, ninth session).

// call sends a request with a JSON body (none if body is nil) and
// returns the response of a 2xx status; any other status is returned as
// a classified error, with the server's code and message.
func (b *base) call(ctx context.Context, method, url string, body any, hdr map[string]string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, errs.E(errs.Invalid, "backend "+b.cfg.Name, err)
		}
		rd = bytes.NewReader(data)
	}
	hr, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, errs.E(errs.Invalid, "backend "+b.cfg.Name, err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "ollie")
	for k, v := range hdr {
		hr.Header.Set(k, v)
	}
	resp, err := b.hc.Do(hr)
	if err != nil {
		return nil, transportError(b.cfg.Name, ctx, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return nil, classify(&APIError{Backend: b.cfg.Name, Status: resp.StatusCode,
		Code: errorCode(raw), Message: errorText(raw), RetryAfter: retryAfter(resp.Header)})
}

// decode reads a JSON response whole into v.
func (b *base) decode(ctx context.Context, resp *http.Response, v any) error {
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return transportError(b.cfg.Name, ctx, err)
	}
	return nil
}

// errorText finds the message in an error body of unknown shape: OpenAI's
// and Anthropic's error.message, vLLM's top-level message, Ollama's
// error string.
func errorText(raw []byte) string {
	for _, path := range []string{"error.message", "message", "error", "detail"} {
		if r := gjson.GetBytes(raw, path); r.Type == gjson.String {
			return r.Str
		}
	}
	return string(bytes.TrimSpace(raw))
}

// errorCode finds the code of an error body: OpenAI's error.code (else
// its error.type), Anthropic's error.type.
func errorCode(raw []byte) string {
	r := gjson.GetBytes(raw, "error")
	if !r.IsObject() {
		return ""
	}
	return firstString(r, "code", "type")
}

// firstString is r if it is a string, else the first of its paths that
// is.
func firstString(r gjson.Result, paths ...string) string {
	if r.Type == gjson.String {
		return r.Str
	}
	for _, p := range paths {
		if v := r.Get(p); v.Type == gjson.String {
			return v.Str
		}
	}
	return ""
}
