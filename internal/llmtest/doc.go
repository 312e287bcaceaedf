// Package llmtest is a scripted LLM server: the one stand-in in ollie's
// tests, since a model is an external service. It speaks the real wire
// formats over real HTTP on a loopback port: OpenAI chat completions
// (server-sent events), Anthropic Messages (named server-sent events) and
// Ollama's /api/chat (JSON lines), with their model listings.
//
// A test scripts the turns, points a backend at the server and checks
// both what came back and what was sent:
//
//	srv := llmtest.NewTest(t, &llmtest.Script{Turns: []llmtest.Turn{
//		{Text: "Let me look.", Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "ls")}},
//		{Status: 429, RetryAfter: 2},
//		{Text: "Done.", Usage: &llmtest.Usage{Input: 1200, Output: 40, CacheRead: 1000}},
//	}})
//	b, _ := backend.New(config.Backend{Name: "t", Kind: "anthropic", BaseURL: srv.URL, Model: "m"}, "key", nil)
//	... run the agent ...
//	req := srv.Requests()[0] // model, system, messages, tools, num_ctx, headers, raw body
//
// Turns stream text and tool-call arguments in pieces of Script.Chunk
// characters, paced by Script.Latency, as real servers do; Instant sends
// each response at once for benchmarks. A turn can instead fail: an HTTP
// error in the API's own shape (rate limit with Retry-After, server error,
// context overflow, bad key), a stream dropped midway, or an error event
// inside the stream. A turn can also replay recorded bytes (Raw,
// RawFile) as they are.
//
// Scripts are Go values or JSON files (LoadScript); the format is
// described in docs/backends.md. `ollie llmserver` serves one for demos.
package llmtest
