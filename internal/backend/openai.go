package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

const openaiDefaultURL = "https://api.openai.com/v1"

// openaiBackend speaks OpenAI chat completions: OpenAI itself, OpenRouter,
// vLLM, the llama.cpp server, LM Studio, Ollama's /v1.
type openaiBackend struct {
	base
	chat   openai.ChatCompletionService
	models openai.ModelService
	// official is set for api.openai.com, which wants max_completion_tokens
	// where the compatible servers know max_tokens.
	official bool
}

func newOpenAI(cfg config.Backend, key string, hc *http.Client) *openaiBackend {
	b := &openaiBackend{base: base{cfg: cfg, hc: hc}}
	url := b.baseURL(openaiDefaultURL)
	// The services are built directly, not through openai.NewClient,
	// because NewClient reads OPENAI_API_KEY, OPENAI_BASE_URL and more from
	// the process environment; ollie's configuration is a value.
	opts := []option.RequestOption{
		option.WithBaseURL(url + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // the agent loop retries, visibly
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	b.chat = openai.NewChatCompletionService(opts...)
	b.models = openai.NewModelService(opts...)
	b.official = strings.Contains(url, "://api.openai.com")
	return b
}

func (b *openaiBackend) Chat(ctx context.Context, req *Request, fn func(Event) error) (*Reply, error) {
	model, err := b.model(req.Model)
	if err != nil {
		return nil, err
	}
	params, err := b.params(req, model)
	if err != nil {
		return nil, err
	}
	// The SDK sends the request and reads an error response; the stream
	// is read here (see openaiChunk).
	var resp *http.Response
	opts := append(b.reasoning(&params, req.Reasoning, model),
		option.WithJSONSet("stream", true), option.WithResponseBodyInto(&resp))
	if _, err := b.chat.New(ctx, params, opts...); err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return nil, b.error(ctx, err)
	}
	defer resp.Body.Close()
	d := openaiDecoder{a: newAssembler(ctx, b.cfg.Name, req, model, fn)}
	sse := newSSEReader(resp.Body)
	for {
		data, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return d.a.partial(), b.error(ctx, err)
		}
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			break
		}
		if bytes.Contains(data, []byte(`"error"`)) {
			if r := gjson.GetBytes(data, "error"); r.Exists() {
				return d.a.partial(), classify(&APIError{Backend: b.cfg.Name, Code: firstString(r, "code", "type"), Message: firstString(r, "message")})
			}
		}
		// Text that arrived while the last piece was passed on goes on
		// as one piece (see assembler.batch).
		d.a.batch = sse.more()
		if err := d.event(data); err != nil {
			return d.a.partial(), err
		}
	}
	d.a.batch = false
	if err := d.a.flush(); err != nil {
		return d.a.partial(), err
	}
	if d.finish == "" {
		return d.a.partial(), streamCut(b.cfg.Name)
	}
	if err := d.flushCalls(); err != nil {
		return d.a.partial(), err
	}
	return d.a.finish(openaiStop(d.finish))
}

func (b *openaiBackend) params(req *Request, model string) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: model}
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	deepseek := b.host(openaiDefaultURL) == "api.deepseek.com"
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Text))
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Text))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Text, m.CallID))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.Calls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(normArgs(c.Args))},
					}})
			}
			if deepseek && len(m.Calls) > 0 {
				// DeepSeek's thinking mode refuses a tool-use turn whose
				// assistant messages lack their reasoning_content.
				if r := unsignedThinking(m.Thinking); r != "" {
					a.SetExtraFields(map[string]any{"reasoning_content": r})
				}
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, errs.E(errs.Invalid, "backend "+b.cfg.Name+": unknown role "+string(m.Role))
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: schema,
		}))
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if b.official {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	return p, nil
}

// reasoning sets the request's reasoning parameter as the server takes
// it: reasoning_effort for OpenAI's reasoning models (none for the
// others) and for compatible servers (Groq, vLLM, llama.cpp ...);
// OpenRouter's reasoning object, with max_tokens for a budget; DeepSeek's
// thinking switch with reasoning_effort. Parameters the SDK does not
// know go in as extra JSON.
func (b *openaiBackend) reasoning(p *openai.ChatCompletionNewParams, r Reasoning, model string) []option.RequestOption {
	if r.IsZero() {
		return nil
	}
	host := b.host(openaiDefaultURL)
	switch {
	case b.official:
		if openaiReasons(model) && !r.off() {
			p.ReasoningEffort = shared.ReasoningEffort(r.effort())
		}
	case host == "openrouter.ai" || strings.HasSuffix(host, ".openrouter.ai"):
		v := map[string]any{}
		switch {
		case r.off():
			v["enabled"] = false
		case r.Budget > 0:
			v["max_tokens"] = r.Budget
		default:
			v["effort"] = r.effort()
		}
		return []option.RequestOption{option.WithJSONSet("reasoning", v)}
	case host == "api.deepseek.com":
		if r.off() {
			return []option.RequestOption{option.WithJSONSet("thinking", map[string]any{"type": "disabled"})}
		}
		p.ReasoningEffort = shared.ReasoningEffort(r.effort())
		return []option.RequestOption{option.WithJSONSet("thinking", map[string]any{"type": "enabled"})}
	default:
		if !r.off() {
			p.ReasoningEffort = shared.ReasoningEffort(r.effort())
		}
	}
	return nil
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

// error classifies a failed stream.
func (b *openaiBackend) error(ctx context.Context, err error) error {
	var ae *openai.Error
	if errors.As(err, &ae) {
		e := &APIError{Backend: b.cfg.Name, Status: ae.StatusCode, Code: ae.Code, Message: ae.Message}
		if e.Code == "" {
			e.Code = ae.Type
		}
		if ae.Response != nil {
			e.RetryAfter = retryAfter(ae.Response.Header)
			if e.Message == "" && ae.Response.Body != nil {
				// vLLM and others put the error at the top level, not
				// under "error" where the SDK looks.
				raw, _ := io.ReadAll(io.LimitReader(ae.Response.Body, 1<<16))
				e.Message = errorText(raw)
			}
		}
		return classify(e)
	}
	return transportError(b.cfg.Name, ctx, err)
}

// errorText finds the message in an error body of unknown shape.
func errorText(raw []byte) string {
	for _, path := range []string{"error.message", "message", "error", "detail"} {
		if r := gjson.GetBytes(raw, path); r.Type == gjson.String {
			return r.Str
		}
	}
	return strings.TrimSpace(string(raw))
}

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
	page, err := b.models.List(ctx)
	if err != nil {
		return nil, b.error(ctx, err)
	}
	out := make([]Model, 0, len(page.Data))
	for _, m := range page.Data {
		out = append(out, Model{ID: m.ID, Window: listedWindow(m.RawJSON())})
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
