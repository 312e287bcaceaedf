// Package backend is how the agent loop talks to models: OpenAI chat
// completions (OpenAI, OpenRouter, vLLM, the llama.cpp server, LM Studio,
// Ollama's /v1), Anthropic Messages and Ollama's native /api/chat, behind
// one interface that knows no provider.
//
// One step of the loop:
//
//	b, err := backend.New(cfg.Backends[i], cfg.Secrets[cfg.Backends[i].Name], nil)
//	reply, err := b.Chat(ctx, &backend.Request{
//		System:   systemPrompt,
//		Messages: history,
//		Tools:    []backend.Tool{executeCode},
//	}, func(e backend.Event) error {
//		switch e.Kind {
//		case backend.EventText:
//			chat.Append(e.Text) // as it streams
//		case backend.EventToolCall:
//			chat.Append("-> " + e.Call.Name + "(" + string(e.Call.Args) + ")")
//		}
//		return nil
//	})
//	history = append(history, reply.Message)
//	for _, c := range reply.Message.Calls {
//		out, failed := run(c)
//		history = append(history, backend.Message{Role: backend.RoleTool, CallID: c.ID, Text: out, Error: failed})
//	}
//	session.Add(reply.Usage)
//	usd, known := backend.Cost(reply.Model, reply.Usage)
//
// Messages are the same for every backend; each converts them to its wire
// format (Anthropic's merged user turns and tool_result blocks, Ollama's
// tool_name, OpenAI's tool_call_id). Usage counts input tokens read from
// and written to a prompt cache apart from the rest, so Usage.Prompt is
// what filled the context window and Cost prices each part. When a server
// reports no usage, Chat estimates it (EstimateTokens) and marks it
// Estimated.
//
// # Errors and retries
//
// A backend never retries (it builds and sends its requests itself, see
// call.go): the agent loop retries, with a line in the chat saying so. Every
// error has an errs.Kind for that decision:
//
//	IsContextOverflow(err) (kind TooLarge)  compact the history, then retry
//	RateLimited   wait RetryAfter(err) (Retry-After, else the reset headers) if the server said, else back off; retry
//	Unavailable   5xx, overloaded, a stream cut or failed midway: back off, retry;
//	              but IsUnreachable(err) (refused, no such host): stop, the text says the fix
//	Timeout       retry
//	Unsupported   the model cannot call tools: use the fenced form (below)
//	Permission    bad key, no quota or billing: stop
//	Invalid, NotExist  a bad request or unknown model: stop
//	Interrupted   ctx was cancelled
//
// The detail of a server's error is an *APIError in the chain. On error,
// Chat's reply holds what had streamed before the failure.
//
// # Stop reasons, reasoning and cost
//
// Reply.Stop says why a reply ended; StopMaxTokens means it was cut, tool
// calls included, and StopRefused (with Message.Refused) that the model
// declined, its refusal text in Message.Text and in EventRefusal events.
// Reasoning streams as EventThinking and is never part of Message.Text;
// Anthropic's signed thinking blocks are kept in Message.Thinking and
// sent back unchanged. Reply.Priced says when the backend knows the cost
// (OpenRouter's usage.cost, a local Ollama's 0); otherwise price Usage
// with Cost.
//
// # Models without tool calling
//
// A model that cannot call tools natively is told FencedInstructions in
// its system prompt and writes its calls as fenced blocks, which
// ParseFencedToolCalls turns into execute_code calls.
//
// # Context windows
//
// ContextWindow reports a model's window from the configuration, the
// server (OpenAI-compatible model listings, Anthropic's max_input_tokens,
// Ollama's /api/show) or the table of known models. Ollama is always sent
// options.num_ctx, so it never silently cuts a long session to its small
// default window.
package backend
