package backend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// anthropicVersion is the API version ollie speaks, the one the SDK of
// its tests sends (TestAnthropicRequestAsTheSDK).
const anthropicVersion = "2026-10-21"

// anthropicBackend speaks the Anthropic Messages API.
type anthropicBackend struct {
	base
	url string
	hdr map[string]string // version and key
}

func newAnthropic(cfg config.Backend, key string, hc *http.Client) *anthropicBackend {
	b := &anthropicBackend{base: base{cfg: cfg, hc: hc}}
	b.url = b.baseURL("https://api.anthropic.com")
	b.hdr = map[string]string{"Anthropic-Version": anthropicVersion}
	if key != "" {
		// x-api-key is the header the Messages API documents and the
		// compatible servers check; proxies take the bearer token.
		b.hdr["X-Api-Key"] = key
		b.hdr["Authorization"] = "Bearer " + key
	}
	return b
}

func (b *anthropicBackend) Chat(ctx context.Context, req *Request, fn func(Event) error) (*Reply, error) {
	model, err := b.model(req.Model)
	if err != nil {
		return nil, err
	}
	body, err := b.request(req, model)
	if err != nil {
		return nil, err
	}
	d := &anthropicDecoder{a: newAssembler(ctx, b.cfg.Name, req, model, fn)}
	return b.stream(ctx, b.url+"/v1/messages", body, b.hdr, d)
}

// The Messages request, as Anthropic documents it and the SDK sends it.
type anthropicRequest struct {
	Model       string              `json:"model"`
	MaxTokens   int64               `json:"max_tokens"`
	Messages    []anthropicMessage  `json:"messages"`
	System      []*anthropicContent `json:"system,omitempty"`
	Tools       []anthropicTool     `json:"tools,omitempty"`
	Thinking    *anthropicThinking  `json:"thinking,omitempty"`
	Temperature *float64            `json:"temperature,omitempty"`
	Stream      bool                `json:"stream"`
}

type anthropicMessage struct {
	Role    string              `json:"role"`
	Content []*anthropicContent `json:"content"`
}

// anthropicContent is a content block of any type; each type sends its
// own fields, the required ones even when empty (MarshalJSON).
type anthropicContent struct {
	typ                       string
	text, id, name, sig, data string
	input                     json.RawMessage
	content                   []*anthropicContent // a tool_result's
	isError, cached           bool
}

// anthropicWire is the JSON of a content block.
type anthropicWire struct {
	Type         string              `json:"type"`
	Text         *string             `json:"text,omitempty"`
	ID           *string             `json:"id,omitempty"`
	Name         *string             `json:"name,omitempty"`
	Input        json.RawMessage     `json:"input,omitempty"`
	ToolUseID    *string             `json:"tool_use_id,omitempty"`
	Content      []*anthropicContent `json:"content,omitempty"`
	IsError      bool                `json:"is_error,omitempty"`
	Thinking     *string             `json:"thinking,omitempty"`
	Signature    *string             `json:"signature,omitempty"`
	Data         *string             `json:"data,omitempty"`
	CacheControl *anthropicCache     `json:"cache_control,omitempty"`
}

type anthropicCache struct {
	Type string `json:"type"`
}

func (k *anthropicContent) MarshalJSON() ([]byte, error) {
	w := anthropicWire{Type: k.typ}
	switch k.typ {
	case "text":
		w.Text = &k.text
	case "tool_use":
		w.ID, w.Name, w.Input = &k.id, &k.name, k.input
	case "tool_result":
		w.ToolUseID, w.Content, w.IsError = &k.id, k.content, k.isError
	case "thinking":
		w.Thinking, w.Signature = &k.text, &k.sig
	case "redacted_thinking":
		w.Data = &k.data
	}
	if k.cached {
		w.CacheControl = &anthropicCache{Type: "ephemeral"}
	}
	return json.Marshal(&w)
}

type anthropicTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

func (b *anthropicBackend) request(req *Request, model string) (*anthropicRequest, error) {
	p := &anthropicRequest{Model: model, MaxTokens: int64(req.MaxTokens), Stream: true}
	if p.MaxTokens <= 0 {
		p.MaxTokens = 8192
		if info, ok := lookupModel(model); ok && info.MaxOutput > 0 {
			p.MaxTokens = int64(info.MaxOutput)
		}
	}
	if r := req.Reasoning; !r.IsZero() && !r.off() && anthropicThinks(model) {
		// Extended thinking: budget_tokens counts within max_tokens and
		// must be below it. A max_tokens the caller set is kept for the
		// answer, on top of the budget; the model's maximum caps both.
		budget := int64(r.budget())
		if req.MaxTokens > 0 && p.MaxTokens <= budget {
			p.MaxTokens += budget
		}
		if info, ok := lookupModel(model); ok && info.MaxOutput > 0 && p.MaxTokens > int64(info.MaxOutput) {
			p.MaxTokens = int64(info.MaxOutput)
		}
		if budget >= p.MaxTokens {
			budget = max(1024, p.MaxTokens/2)
		}
		if budget < p.MaxTokens {
			p.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: budget}
		}
	}
	if p.Thinking == nil {
		// With thinking on, the API takes no temperature but 1.
		p.Temperature = req.Temperature
	}
	if req.System != "" {
		// A cache breakpoint after the system prompt caches the tools and
		// the system prompt, which every request of a session repeats.
		p.System = []*anthropicContent{{typ: "text", text: req.System, cached: true}}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return nil, err
		}
		p.Tools = append(p.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: inputSchema(schema)})
	}
	msgs, err := anthropicMessages(req.Messages)
	if err != nil {
		return nil, errs.E(errs.Invalid, "backend "+b.cfg.Name, err)
	}
	p.Messages = msgs
	return p, nil
}

// inputSchema is a tool's schema as the API takes it: an object, its
// required a list of names.
func inputSchema(schema map[string]any) map[string]any {
	in := map[string]any{"type": "object"}
	for k, v := range schema {
		switch k {
		case "type":
		case "required":
			in[k] = stringList(v)
		default:
			in[k] = v
		}
	}
	return in
}

// anthropicMessages converts the conversation. Tool results are blocks of
// a user message, and consecutive messages of one role are merged, as the
// API requires roles to alternate. A second cache breakpoint on the last
// block lets the next request read the whole conversation from the cache.
func anthropicMessages(in []Message) ([]anthropicMessage, error) {
	var out []anthropicMessage
	add := func(role string, blocks ...*anthropicContent) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropicMessage{Role: role, Content: blocks})
	}
	for _, m := range in {
		switch m.Role {
		case RoleUser:
			if m.Text != "" {
				add("user", &anthropicContent{typ: "text", text: m.Text})
			}
		case RoleTool:
			// An empty result has no content: the API refuses an empty
			// text block.
			tr := &anthropicContent{typ: "tool_result", id: m.CallID, isError: m.Error}
			if m.Text != "" {
				tr.content = []*anthropicContent{{typ: "text", text: m.Text}}
			}
			add("user", tr)
		case RoleAssistant:
			// Signed thinking goes back first and unchanged, as the API
			// requires within a tool-use turn when thinking is on.
			blocks := thinkingBlocks(m.Thinking)
			if m.Text != "" {
				blocks = append(blocks, &anthropicContent{typ: "text", text: m.Text})
			}
			for _, c := range m.Calls {
				blocks = append(blocks, &anthropicContent{typ: "tool_use", id: c.ID, name: c.Name, input: objectArgs(c.Args)})
			}
			if len(blocks) > 0 {
				add("assistant", blocks...)
			}
		default:
			return nil, errors.New("role " + string(m.Role) + " has no place in the messages")
		}
	}
	if n := len(out); n > 0 {
		last := out[n-1].Content[len(out[n-1].Content)-1]
		switch last.typ {
		case "text", "tool_result", "tool_use":
			last.cached = true
		}
	}
	return out, nil
}

func thinkingBlocks(ts []Thinking) []*anthropicContent {
	var out []*anthropicContent
	for _, t := range ts {
		switch {
		case t.Redacted != "":
			out = append(out, &anthropicContent{typ: "redacted_thinking", data: t.Redacted})
		case t.Signature != "":
			out = append(out, &anthropicContent{typ: "thinking", text: t.Text, sig: t.Signature})
		}
		// Unsigned thinking (another provider's) is not sent: the API
		// would refuse it.
	}
	return out
}

// objectArgs returns tool arguments as the object the API insists on;
// arguments that were not an object are kept under "arguments".
func objectArgs(args json.RawMessage) json.RawMessage {
	args = normArgs(args)
	if args[0] == '{' {
		return args
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"arguments": args})
	return b
}

func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, s := range l {
		if s, ok := s.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (b *anthropicBackend) Models(ctx context.Context) ([]Model, error) {
	var out []Model
	q := url.Values{"limit": {"1000"}}
	for {
		resp, err := b.call(ctx, http.MethodGet, b.url+"/v1/models?"+q.Encode(), nil, b.hdr)
		if err != nil {
			return nil, err
		}
		var page struct {
			Data    []anthropicModel `json:"data"`
			HasMore bool             `json:"has_more"`
			LastID  string           `json:"last_id"`
		}
		if err := b.decode(ctx, resp, &page); err != nil {
			return nil, err
		}
		for _, m := range page.Data {
			out = append(out, Model{ID: m.ID, Window: int(m.MaxInputTokens)})
		}
		if !page.HasMore || page.LastID == "" || len(page.Data) == 0 {
			return out, nil
		}
		q.Set("after_id", page.LastID)
	}
}

type anthropicModel struct {
	ID             string `json:"id"`
	MaxInputTokens int64  `json:"max_input_tokens"`
}

func (b *anthropicBackend) ContextWindow(ctx context.Context, model string) (int, error) {
	return b.window(ctx, model, func(ctx context.Context, model string) (int, error) {
		resp, err := b.call(ctx, http.MethodGet, b.url+"/v1/models/"+url.PathEscape(model), nil, b.hdr)
		if err != nil {
			return 0, err
		}
		var m anthropicModel
		if err := b.decode(ctx, resp, &m); err != nil {
			return 0, err
		}
		return int(m.MaxInputTokens), nil
	})
}
