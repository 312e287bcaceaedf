package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// ollamaBackend speaks Ollama's native API. It has no SDK to check it
// against (Ollama's own client package drags in the whole server
// module), and it is needed beside the openai kind: the OpenAI-compatible
// /v1 endpoint can neither set num_ctx per request nor report a model's
// context length, so Ollama would silently cut long sessions to its small
// default window.
type ollamaBackend struct {
	base
	url string
	key string
}

// ollamaMaxCtx caps the num_ctx sent by default: the KV cache of a model's
// full window (often 128k tokens) can exceed a local GPU's memory.
const ollamaMaxCtx = 32768

const ollamaDefaultURL = "http://127.0.0.1:11434"

// ollamaDefaultCtx is the window of a model whose /api/show says none.
const ollamaDefaultCtx = 8192

func newOllama(cfg config.Backend, key string, hc *http.Client) *ollamaBackend {
	b := &ollamaBackend{base: base{cfg: cfg, hc: hc}, key: key}
	b.url = b.baseURL(ollamaDefaultURL)
	return b
}

type ollamaMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	Thinking   string           `json:"thinking,omitempty"`
	ToolCalls  []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName   string           `json:"tool_name,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // an object, not a string as in OpenAI
	} `json:"function"`
}

type ollamaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Tools    []ollamaTool    `json:"tools,omitempty"`
	Stream   bool            `json:"stream"`
	// Think is true or false, or a level for models that take one.
	Think   any            `json:"think,omitempty"`
	Options map[string]any `json:"options,omitempty"`
}

func (b *ollamaBackend) request(ctx context.Context, req *Request, model string) (*ollamaRequest, error) {
	numCtx := req.NumCtx
	if numCtx <= 0 {
		n, err := b.ContextWindow(ctx, model)
		switch {
		case errs.Is(err, errs.NotExist):
			// An unknown model: /api/chat says so better, with a hint to
			// pull it.
		case err != nil:
			return nil, err
		}
		numCtx = n
	}
	r := &ollamaRequest{Model: model, Stream: true, Options: map[string]any{}}
	if numCtx > 0 {
		r.Options["num_ctx"] = numCtx
	}
	if req.Temperature != nil {
		r.Options["temperature"] = *req.Temperature
	}
	if req.MaxTokens > 0 {
		r.Options["num_predict"] = req.MaxTokens
	}
	r.Think = ollamaThink(req.Reasoning, model)
	if req.System != "" {
		r.Messages = append(r.Messages, ollamaMessage{Role: "system", Content: req.System})
	}
	names := map[string]string{} // call id → tool name, for tool results
	for _, m := range req.Messages {
		om := ollamaMessage{Role: string(m.Role), Content: m.Text}
		switch m.Role {
		case RoleSystem, RoleUser:
		case RoleAssistant:
			// Ollama takes a thinking model's reasoning back in the history.
			om.Thinking = unsignedThinking(m.Thinking)
			for _, c := range m.Calls {
				var tc ollamaToolCall
				tc.ID, tc.Function.Name, tc.Function.Arguments = c.ID, c.Name, objectArgs(c.Args)
				om.ToolCalls = append(om.ToolCalls, tc)
				names[c.ID] = c.Name
			}
		case RoleTool:
			// Ollama matches results to calls by tool name; newer
			// versions also read the call id.
			om.ToolName, om.ToolCallID = names[m.CallID], m.CallID
		default:
			return nil, errs.E(errs.Invalid, "backend "+b.cfg.Name+": unknown role "+string(m.Role))
		}
		r.Messages = append(r.Messages, om)
	}
	for _, t := range req.Tools {
		var ot ollamaTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, t.Schema
		if len(ot.Function.Parameters) == 0 {
			ot.Function.Parameters = json.RawMessage(`{"type":"object"}`)
		}
		r.Tools = append(r.Tools, ot)
	}
	return r, nil
}

// call sends a request to the server; see base.call.
func (b *ollamaBackend) call(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var hdr map[string]string
	if b.key != "" {
		// ollama.com and authenticating proxies take a bearer token.
		hdr = map[string]string{"Authorization": "Bearer " + b.key}
	}
	return b.base.call(ctx, method, b.url+path, body, hdr)
}

func (b *ollamaBackend) Models(ctx context.Context) ([]Model, error) {
	resp, err := b.call(ctx, http.MethodGet, "/api/tags", nil)
	if err != nil {
		return nil, err
	}
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := b.decode(ctx, resp, &tags); err != nil {
		return nil, err
	}
	out := make([]Model, 0, len(tags.Models))
	for _, m := range tags.Models {
		out = append(out, Model{ID: m.Name})
	}
	return out, nil
}

// ContextWindow is the num_ctx ollie sends: the configured one, else a
// num_ctx the model's Modelfile sets, else the model's trained context
// length from /api/show capped at ollamaMaxCtx.
func (b *ollamaBackend) ContextWindow(ctx context.Context, model string) (int, error) {
	return b.window(ctx, model, func(ctx context.Context, model string) (int, error) {
		resp, err := b.call(ctx, http.MethodPost, "/api/show", map[string]string{"model": model})
		if err != nil {
			return 0, err
		}
		var show struct {
			Parameters string                     `json:"parameters"`
			ModelInfo  map[string]json.RawMessage `json:"model_info"`
		}
		if err := b.decode(ctx, resp, &show); err != nil {
			return 0, err
		}
		for _, line := range strings.Split(show.Parameters, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
				if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
					return n, nil
				}
			}
		}
		for k, v := range show.ModelInfo {
			// The key is "<architecture>.context_length".
			if strings.HasSuffix(k, ".context_length") {
				if n, err := strconv.Atoi(string(v)); err == nil && n > 0 {
					return min(n, ollamaMaxCtx), nil
				}
			}
		}
		return ollamaDefaultCtx, nil
	})
}

// ollamaThink is the think parameter for r: a level for gpt-oss, which
// takes one and cannot stop thinking, else true or false. A model that
// cannot think refuses it ("... does not support thinking"), which the
// caller learns from.
func ollamaThink(r Reasoning, model string) any {
	if r.IsZero() {
		return nil
	}
	if strings.HasPrefix(bareModel(model), "gpt-oss") {
		if r.off() {
			return "low"
		}
		return r.effort()
	}
	return !r.off()
}
