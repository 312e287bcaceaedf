package backend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// anthropicBackend speaks the Anthropic Messages API.
type anthropicBackend struct {
	base
	client anthropic.Client
}

func newAnthropic(cfg config.Backend, key string, hc *http.Client) *anthropicBackend {
	b := &anthropicBackend{base: base{cfg: cfg, hc: hc}}
	opts := []option.RequestOption{
		// The SDK would otherwise read ANTHROPIC_API_KEY, profiles on
		// disk and more; ollie's configuration is a value.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(b.baseURL("https://api.anthropic.com") + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // the agent loop retries, visibly
	}
	if key != "" {
		// The SDK sends the key as a bearer token; x-api-key is the header
		// the Messages API documents and the compatible servers check.
		opts = append(opts, option.WithAPIKey(key), option.WithHeader("X-Api-Key", key))
	}
	b.client = anthropic.NewClient(opts...)
	return b
}

func (b *anthropicBackend) Chat(ctx context.Context, req *Request, fn func(Event) error) (*Reply, error) {
	model, err := b.model(req.Model)
	if err != nil {
		return nil, err
	}
	params, err := b.params(req, model)
	if err != nil {
		return nil, err
	}
	var opts []option.RequestOption
	if req.Temperature != nil && params.Thinking.OfEnabled == nil {
		// With thinking on, the API takes no temperature but 1.
		// This SDK's parameters have no temperature field; the API has.
		opts = append(opts, option.WithJSONSet("temperature", *req.Temperature))
	}
	stream := b.client.Messages.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	d := anthropicDecoder{a: newAssembler(ctx, b.cfg.Name, req, model, fn)}
	for stream.Next() {
		ev := stream.Current()
		if err := d.event(&ev); err != nil {
			return d.a.partial(), err
		}
	}
	if err := stream.Err(); err != nil {
		return d.a.partial(), b.error(ctx, err)
	}
	if !d.stopped {
		return d.a.partial(), streamCut(b.cfg.Name)
	}
	return d.a.finish(d.stop)
}

func (b *anthropicBackend) params(req *Request, model string) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: int64(req.MaxTokens)}
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
			p.Thinking = anthropic.ThinkingConfigParamOfEnabled(budget)
		}
	}
	if req.System != "" {
		// A cache breakpoint after the system prompt caches the tools and
		// the system prompt, which every request of a session repeats.
		p.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return p, err
		}
		in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type", "properties":
			case "required":
				in.Required = stringList(v)
			default:
				in.ExtraFields[k] = v
			}
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: t.Name, Description: anthropic.String(t.Description), InputSchema: in,
		}})
	}
	msgs, err := anthropicMessages(req.Messages)
	if err != nil {
		return p, errs.E(errs.Invalid, "backend "+b.cfg.Name, err)
	}
	p.Messages = msgs
	return p, nil
}

// anthropicMessages converts the conversation. Tool results are blocks of
// a user message, and consecutive messages of one role are merged, as the
// API requires roles to alternate. A second cache breakpoint on the last
// block lets the next request read the whole conversation from the cache.
func anthropicMessages(in []Message) ([]anthropic.MessageParam, error) {
	var out []anthropic.MessageParam
	add := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(out); n > 0 {
			if last := &out[n-1]; user && last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			} else if !user && last.OfAssistant != nil {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if user {
			out = append(out, anthropic.NewUserMessage(blocks...))
		} else {
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for _, m := range in {
		switch m.Role {
		case RoleUser:
			if m.Text != "" {
				add(true, anthropic.NewTextBlock(m.Text))
			}
		case RoleTool:
			// Not NewToolResultBlock: it sends an empty text block for an
			// empty result, which the API refuses.
			tr := anthropic.ToolResultBlockParam{ToolUseID: m.CallID}
			if m.Text != "" {
				tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
			}
			if m.Error {
				tr.IsError = anthropic.Bool(true)
			}
			add(true, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
		case RoleAssistant:
			// Signed thinking goes back first and unchanged, as the API
			// requires within a tool-use turn when thinking is on.
			blocks := thinkingBlocks(m.Thinking)
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.Calls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, objectArgs(c.Args), c.Name))
			}
			if len(blocks) > 0 {
				add(false, blocks...)
			}
		default:
			return nil, errors.New("role " + string(m.Role) + " has no place in the messages")
		}
	}
	if n := len(out); n > 0 {
		if cc := lastCacheControl(&out[n-1]); cc != nil {
			*cc = anthropic.NewCacheControlEphemeralParam()
		}
	}
	return out, nil
}

func thinkingBlocks(ts []Thinking) []anthropic.ContentBlockParamUnion {
	var out []anthropic.ContentBlockParamUnion
	for _, t := range ts {
		switch {
		case t.Redacted != "":
			out = append(out, anthropic.NewRedactedThinkingBlock(t.Redacted))
		case t.Signature != "":
			out = append(out, anthropic.NewThinkingBlock(t.Signature, t.Text))
		}
		// Unsigned thinking (another provider's) is not sent: the API
		// would refuse it.
	}
	return out
}

// lastCacheControl returns the cache_control of a message's last block.
func lastCacheControl(m *anthropic.MessageParam) *anthropic.CacheControlEphemeralParam {
	var blocks []anthropic.ContentBlockParamUnion
	if m.OfUser != nil {
		blocks = m.OfUser.Content
	} else if m.OfAssistant != nil {
		blocks = m.OfAssistant.Content
	}
	if len(blocks) == 0 {
		return nil
	}
	switch b := blocks[len(blocks)-1]; {
	case b.OfText != nil:
		return &b.OfText.CacheControl
	case b.OfToolResult != nil:
		return &b.OfToolResult.CacheControl
	case b.OfToolUse != nil:
		return &b.OfToolUse.CacheControl
	}
	return nil
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

// error classifies a failed stream.
func (b *anthropicBackend) error(ctx context.Context, err error) error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		e := &APIError{Backend: b.cfg.Name, Status: ae.StatusCode, Code: string(ae.Type()), Message: ae.Message}
		if ae.Response != nil && ae.StatusCode != http.StatusOK {
			e.RetryAfter = retryAfter(ae.Response.Header)
		}
		return classify(e)
	}
	return transportError(b.cfg.Name, ctx, err)
}

func (b *anthropicBackend) Models(ctx context.Context) ([]Model, error) {
	var out []Model
	pager := b.client.Models.ListAutoPaging(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1000)})
	for pager.Next() {
		m := pager.Current()
		out = append(out, Model{ID: m.ID, Window: int(m.MaxInputTokens)})
	}
	if err := pager.Err(); err != nil {
		return nil, b.error(ctx, err)
	}
	return out, nil
}

func (b *anthropicBackend) ContextWindow(ctx context.Context, model string) (int, error) {
	return b.window(ctx, model, func(ctx context.Context, model string) (int, error) {
		m, err := b.client.Models.Get(ctx, model, anthropic.ModelGetParams{})
		if err != nil {
			return 0, b.error(ctx, err)
		}
		return int(m.MaxInputTokens), nil
	})
}
