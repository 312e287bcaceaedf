package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

const openaiDefaultURL = "https://api.openai.com/v1"

// openaiBackend speaks OpenAI chat completions: OpenAI itself, OpenRouter,
// vLLM, the llama.cpp server, LM Studio, Ollama's /v1.
type openaiBackend struct {
	base
	url string
	hdr map[string]string // authorization
	// official is set for api.openai.com, which wants max_completion_tokens
	// where the compatible servers know max_tokens.
	official bool
}

func newOpenAI(cfg config.Backend, key string, hc *http.Client) *openaiBackend {
	b := &openaiBackend{base: base{cfg: cfg, hc: hc}}
	b.url = b.baseURL(openaiDefaultURL)
	if key != "" {
		b.hdr = map[string]string{"Authorization": "Bearer " + key}
	}
	b.official = strings.Contains(b.url, "://api.openai.com")
	return b
}

func (b *openaiBackend) Chat(ctx context.Context, req *Request, fn func(Event) error) (*Reply, error) {
	model, err := b.model(req.Model)
	if err != nil {
		return nil, err
	}
	body, err := b.request(req, model)
	if err != nil {
		return nil, err
	}
	d := &openaiDecoder{a: newAssembler(ctx, b.cfg.Name, req, model, fn)}
	return b.stream(ctx, b.url+"/chat/completions", body, b.hdr, d)
}

// The chat completions request, as OpenAI documents it and the SDK sends
// it; the compatible servers' own parameters (reasoning, thinking,
// reasoning_content) beside it.
type openaiRequest struct {
	Model         string          `json:"model"`
	Messages      []openaiMessage `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools               []openaiTool   `json:"tools,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	Reasoning           map[string]any `json:"reasoning,omitempty"` // OpenRouter
	Thinking            map[string]any `json:"thinking,omitempty"`  // DeepSeek
}

type openaiMessage struct {
	Role string `json:"role"`
	// Content is absent from an assistant message without text.
	Content          *string          `json:"content,omitempty"`
	ToolCalls        []openaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string           `json:"tool_call_id,omitempty"`
	ReasoningContent string           `json:"reasoning_content,omitempty"` // DeepSeek
}

type openaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type openaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

func (b *openaiBackend) request(req *Request, model string) (*openaiRequest, error) {
	p := &openaiRequest{Model: model, Stream: true}
	p.StreamOptions.IncludeUsage = true
	text := func(role Role, s string) openaiMessage { return openaiMessage{Role: string(role), Content: &s} }
	if req.System != "" {
		p.Messages = append(p.Messages, text(RoleSystem, req.System))
	}
	deepseek := b.host(openaiDefaultURL) == "api.deepseek.com"
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
			p.Messages = append(p.Messages, text(m.Role, m.Text))
		case RoleTool:
			t := text(m.Role, m.Text)
			t.ToolCallID = m.CallID
			p.Messages = append(p.Messages, t)
		case RoleAssistant:
			a := openaiMessage{Role: string(m.Role)}
			if m.Text != "" {
				a.Content = &m.Text
			}
			for _, c := range m.Calls {
				tc := openaiToolCall{ID: c.ID, Type: "function"}
				tc.Function.Name, tc.Function.Arguments = c.Name, string(normArgs(c.Args))
				a.ToolCalls = append(a.ToolCalls, tc)
			}
			if deepseek && len(m.Calls) > 0 {
				// DeepSeek's thinking mode refuses a tool-use turn whose
				// assistant messages lack their reasoning_content.
				a.ReasoningContent = unsignedThinking(m.Thinking)
			}
			p.Messages = append(p.Messages, a)
		default:
			return nil, errs.E(errs.Invalid, "backend "+b.cfg.Name+": unknown role "+string(m.Role))
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return nil, err
		}
		ot := openaiTool{Type: "function"}
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, schema
		p.Tools = append(p.Tools, ot)
	}
	p.Temperature = req.Temperature
	if req.MaxTokens > 0 {
		if b.official {
			p.MaxCompletionTokens = req.MaxTokens
		} else {
			p.MaxTokens = req.MaxTokens
		}
	}
	b.reasoning(p, req.Reasoning, model)
	return p, nil
}

// reasoning sets the request's reasoning parameter as the server takes
// it: reasoning_effort for OpenAI's reasoning models (none for the
// others) and for compatible servers (Groq, vLLM, llama.cpp ...);
// OpenRouter's reasoning object, with max_tokens for a budget; DeepSeek's
// thinking switch with reasoning_effort.
func (b *openaiBackend) reasoning(p *openaiRequest, r Reasoning, model string) {
	if r.IsZero() {
		return
	}
	host := b.host(openaiDefaultURL)
	switch {
	case b.official:
		if openaiReasons(model) && !r.off() {
			p.ReasoningEffort = r.effort()
		}
	case host == "openrouter.ai" || strings.HasSuffix(host, ".openrouter.ai"):
		switch {
		case r.off():
			p.Reasoning = map[string]any{"enabled": false}
		case r.Budget > 0:
			p.Reasoning = map[string]any{"max_tokens": r.Budget}
		default:
			p.Reasoning = map[string]any{"effort": r.effort()}
		}
	case host == "api.deepseek.com":
		if r.off() {
			p.Thinking = map[string]any{"type": "disabled"}
			return
		}
		p.ReasoningEffort = r.effort()
		p.Thinking = map[string]any{"type": "enabled"}
	default:
		if !r.off() {
			p.ReasoningEffort = r.effort()
		}
	}
}

// unsignedThinking joins the reasoning of a message that no provider
// signed.
func unsignedThinking(ts []Thinking) string {
	var b strings.Builder
	for _, t := range ts {
		if t.Signature == "" && t.Redacted == "" {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// schemaMap decodes a tool's JSON schema; an empty one takes no arguments.
func schemaMap(t Tool) (map[string]any, error) {
	m := map[string]any{}
	if len(t.Schema) == 0 {
		m["type"] = "object"
		return m, nil
	}
	if err := json.Unmarshal(t.Schema, &m); err != nil {
		return nil, errs.E(errs.Invalid, "tool "+t.Name+": schema is not a json object", err)
	}
	return m, nil
}

func openaiStop(finish string) StopReason {
	switch finish {
	case "stop":
		return StopEnd
	case "tool_calls", "function_call":
		return StopToolUse
	case "length":
		return StopMaxTokens
	case "content_filter":
		return StopRefused
	}
	return StopOther
}

func (b *openaiBackend) Models(ctx context.Context) ([]Model, error) {
	resp, err := b.call(ctx, http.MethodGet, b.url+"/models", nil, b.hdr)
	if err != nil {
		return nil, err
	}
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := b.decode(ctx, resp, &list); err != nil {
		return nil, err
	}
	out := make([]Model, 0, len(list.Data))
	for _, m := range list.Data {
		raw := string(m)
		out = append(out, Model{ID: gjson.Get(raw, "id").Str, Window: listedWindow(raw)})
	}
	return out, nil
}

// listedWindow finds a context window in a model listing entry. OpenAI
// lists none; the compatible servers each use their own field.
func listedWindow(raw string) int {
	for _, path := range []string{
		"context_length",              // OpenRouter, LM Studio
		"max_model_len",               // vLLM
		"context_window",              // Groq
		"max_context_length",          // LM Studio's own API
		"meta.n_ctx_train",            // llama.cpp server
		"top_provider.context_length", // OpenRouter, per provider
	} {
		if r := gjson.Get(raw, path); r.Type == gjson.Number && r.Int() > 0 {
			return int(r.Int())
		}
	}
	return 0
}

func (b *openaiBackend) ContextWindow(ctx context.Context, model string) (int, error) {
	return b.window(ctx, model, func(ctx context.Context, model string) (int, error) {
		ms, err := b.Models(ctx)
		if err != nil {
			return 0, err
		}
		for _, m := range ms {
			if m.ID == model {
				return m.Window, nil
			}
		}
		return 0, nil
	})
}
