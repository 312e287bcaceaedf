package backend

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"ollie.dev/ollie/internal/config"
)

// The official SDKs are the oracle of the requests ollie builds itself
// (call.go): each test below sends one request through the SDK, as the
// SDK's own parameters say it (the way ollie built its requests before it
// stopped linking the SDKs), and the same request through ollie's
// backend, to one recording server, and compares what arrived: the
// method, path and query, the headers the servers read, and the body as
// a JSON value.

// recorder is an HTTP server that keeps each request and answers it with
// a stream that ends at once.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method, path string
	query        neturl.Values
	header       http.Header
	body         any
}

func newRecorder(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Errorf("%s %s: body is not JSON: %s", r.Method, r.URL, raw)
			}
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{r.Method, r.URL.Path, r.URL.Query(), r.Header.Clone(), body})
		rec.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

// last returns the last request and forgets them all.
func (rec *recorder) last(t *testing.T) recorded {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("no request arrived")
	}
	r := rec.reqs[len(rec.reqs)-1]
	rec.reqs = nil
	return r
}

// client sends every request, whatever its host, to the recorder, so that
// a backend configured with a provider's URL builds that provider's
// request.
func (rec *recorder) client() *http.Client { return HostedAt(rec.URL) }

// HostedAt returns an HTTP client that sends every request, whatever its
// host, to the server at url (for the tests of package backend_test too).
func HostedAt(url string) *http.Client {
	u, _ := neturl.Parse(url)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, u.Host)
	}
	return &http.Client{Transport: t}
}

// sameRequest compares what the SDK sent with what ollie sent.
func sameRequest(t *testing.T, name string, sdk, ours recorded, headers ...string) {
	t.Helper()
	if sdk.method != ours.method || sdk.path != ours.path || !reflect.DeepEqual(sdk.query, ours.query) {
		t.Errorf("%s: ollie sent %s %s?%s, the SDK %s %s?%s", name, ours.method, ours.path, ours.query.Encode(), sdk.method, sdk.path, sdk.query.Encode())
	}
	for _, h := range headers {
		if s, o := sdk.header.Get(h), ours.header.Get(h); s != o {
			t.Errorf("%s: header %s: ollie sent %q, the SDK %q", name, h, o, s)
		}
	}
	if !reflect.DeepEqual(sdk.body, ours.body) {
		s, _ := json.MarshalIndent(sdk.body, "", " ")
		o, _ := json.MarshalIndent(ours.body, "", " ")
		t.Errorf("%s: bodies differ\nollie: %s\nSDK:   %s", name, o, s)
	}
}

// conversation is a request with every kind of message and tool.
func conversation() *Request {
	temp := 0.25
	return &Request{
		System: "you are terse",
		Messages: []Message{
			{Role: RoleUser, Text: "list the files"},
			{Role: RoleAssistant, Text: "I will look.", Calls: []ToolCall{
				{ID: "call_1", Name: "execute_code", Args: json.RawMessage(`{"steps":[{"code":"ls","language":"bash"}]}`)},
				{ID: "call_2", Name: "execute_code", Args: json.RawMessage(`"not an object"`)},
			}, Thinking: []Thinking{{Text: "signed", Signature: "sig=="}, {Redacted: "opaque"}, {Text: "unsigned"}}},
			{Role: RoleTool, CallID: "call_1", Text: "a\nb\n"},
			{Role: RoleTool, CallID: "call_2", Text: "", Error: true},
			{Role: RoleAssistant, Calls: []ToolCall{{ID: "call_3", Name: "execute_code", Args: nil}}},
			{Role: RoleTool, CallID: "call_3", Text: "exit 1", Error: true},
			{Role: RoleAssistant, Text: "Two files: a and b."},
			{Role: RoleUser, Text: "thanks"},
		},
		Tools: []Tool{
			{Name: "execute_code", Description: "run a pipeline", Schema: json.RawMessage(
				`{"type":"object","properties":{"steps":{"type":"array"},"timeout":{"type":"number"}},"required":["steps"],"additionalProperties":false}`)},
			{Name: "nothing", Description: ""},
		},
		Temperature: &temp,
		MaxTokens:   1000,
	}
}

func TestOpenAIRequestAsTheSDK(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	})
	hc := rec.client()
	off, high, budget := Reasoning{Effort: "off"}, Reasoning{Effort: "high"}, Reasoning{Budget: 5000}
	for _, c := range []struct {
		name, url, model string
		r                Reasoning
	}{
		{"openai", "http://api.openai.com/v1", "o3", high},
		{"openai, no reasoning model", "http://api.openai.com/v1", "gpt-4o", high},
		{"openrouter budget", "http://openrouter.ai/api/v1", "x/y", budget},
		{"openrouter effort", "http://openrouter.ai/api/v1", "x/y", high},
		{"openrouter off", "http://eu.openrouter.ai/api/v1", "x/y", off},
		{"deepseek", "http://api.deepseek.com", "deepseek-chat", high},
		{"deepseek off", "http://api.deepseek.com", "deepseek-chat", off},
		{"compatible", "http://vllm.test:8000/v1", "qwen", high},
		{"compatible, no reasoning", "http://vllm.test:8000/v1/", "qwen", Reasoning{}},
	} {
		for _, key := range []string{"sk-test", ""} {
			req := conversation()
			req.Reasoning = c.r
			b := newOpenAI(config.Backend{Name: "o", Kind: config.KindOpenAI, BaseURL: c.url}, key, hc)
			if _, err := b.Chat(context.Background(), withModel(req, c.model), nil); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			ours := rec.last(t)
			sdkOpenAIChat(t, b, key, hc, req, c.model)
			sameRequest(t, c.name+" key "+key, rec.last(t), ours, "Authorization", "Content-Type")
		}
	}
}

func withModel(r *Request, m string) *Request { r.Model = m; return r }

// sdkOpenAIChat sends req through the SDK, as ollie did.
func sdkOpenAIChat(t *testing.T, b *openaiBackend, key string, hc *http.Client, req *Request, model string) {
	opts := []option.RequestOption{option.WithBaseURL(b.url + "/"), option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	// Which reasoning parameters a server is sent is ollie's
	// (TestReasoningRequestBytes checks each with its bytes); the SDK is
	// the oracle of how they are sent.
	mine, err := b.request(req, model)
	if err != nil {
		t.Fatal(err)
	}
	p := openai.ChatCompletionNewParams{Model: model}
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
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
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(normArgs(c.Args))}}})
			}
			if r := mine.Messages[len(p.Messages)].ReasoningContent; r != "" {
				a.SetExtraFields(map[string]any{"reasoning_content": r})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, tl := range req.Tools {
		schema, _ := schemaMap(tl)
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: tl.Name, Description: openai.String(tl.Description), Parameters: schema}))
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if b.official {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	} else {
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	opts = append(opts, option.WithJSONSet("stream", true))
	p.ReasoningEffort = shared.ReasoningEffort(mine.ReasoningEffort)
	if mine.Reasoning != nil {
		opts = append(opts, option.WithJSONSet("reasoning", mine.Reasoning))
	}
	if mine.Thinking != nil {
		opts = append(opts, option.WithJSONSet("thinking", mine.Thinking))
	}
	var resp *http.Response
	opts = append(opts, option.WithResponseBodyInto(&resp))
	chat := openai.NewChatCompletionService(opts...)
	if _, err := chat.New(context.Background(), p, opts...); err != nil {
		t.Fatalf("the SDK: %v", err)
	}
	resp.Body.Close()
}

func TestAnthropicRequestAsTheSDK(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	hc := rec.client()
	for _, c := range []struct {
		name, model string
		r           Reasoning
		maxTokens   int
		noTemp      bool
	}{
		{"plain", "claude-3-5-haiku-20241022", Reasoning{}, 1000, false},
		{"default max_tokens", "claude-3-5-haiku-20241022", Reasoning{}, 0, false},
		{"thinking", "claude-sonnet-4-5", Reasoning{Effort: "high"}, 0, false},
		{"thinking over max_tokens", "claude-sonnet-4-5", Reasoning{Budget: 6000}, 2000, false},
		{"thinking off", "claude-sonnet-4-5", Reasoning{Effort: "off"}, 0, true},
	} {
		for _, key := range []string{"sk-ant-test", ""} {
			req := conversation()
			req.Reasoning, req.MaxTokens = c.r, c.maxTokens
			if c.noTemp {
				req.Temperature = nil
			}
			b := newAnthropic(config.Backend{Name: "a", Kind: config.KindAnthropic, BaseURL: "http://api.anthropic.com"}, key, hc)
			if _, err := b.Chat(context.Background(), withModel(req, c.model), nil); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			ours := rec.last(t)
			sdkAnthropicChat(t, b, key, hc, req, c.model)
			sameRequest(t, c.name+" key "+key, rec.last(t), ours, "X-Api-Key", "Authorization", "Anthropic-Version", "Content-Type")
		}
	}
	// A request with nothing but a prompt: no system, no tools.
	b := newAnthropic(config.Backend{Name: "a", Kind: config.KindAnthropic, BaseURL: "http://api.anthropic.com"}, "k", hc)
	req := &Request{Model: "claude-3-5-haiku-20241022", Messages: []Message{{Role: RoleUser, Text: "hi"}}}
	if _, err := b.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	ours := rec.last(t)
	sdkAnthropicChat(t, b, "k", hc, req, req.Model)
	sameRequest(t, "bare", rec.last(t), ours, "X-Api-Key", "Anthropic-Version")
}

// sdkAnthropicChat sends req through the SDK, as ollie did.
func sdkAnthropicChat(t *testing.T, b *anthropicBackend, key string, hc *http.Client, req *Request, model string) {
	opts := []aoption.RequestOption{aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(b.url + "/"),
		aoption.WithHTTPClient(hc), aoption.WithMaxRetries(0)}
	if key != "" {
		opts = append(opts, aoption.WithAPIKey(key), aoption.WithHeader("X-Api-Key", key))
	}
	client := anthropic.NewClient(opts...)
	// The arithmetic of max_tokens and the thinking budget is ollie's
	// (TestReasoningRequestBytes checks it); the SDK is the oracle of how
	// they are sent.
	mine, err := b.request(req, model)
	if err != nil {
		t.Fatal(err)
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: mine.MaxTokens}
	if mine.Thinking != nil {
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(mine.Thinking.BudgetTokens)
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for _, tl := range req.Tools {
		schema, _ := schemaMap(tl)
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
			Name: tl.Name, Description: anthropic.String(tl.Description), InputSchema: in}})
	}
	var msgs []anthropic.MessageParam
	add := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(msgs); n > 0 {
			if last := &msgs[n-1]; user && last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			} else if !user && last.OfAssistant != nil {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if user {
			msgs = append(msgs, anthropic.NewUserMessage(blocks...))
		} else {
			msgs = append(msgs, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			add(true, anthropic.NewTextBlock(m.Text))
		case RoleTool:
			tr := anthropic.ToolResultBlockParam{ToolUseID: m.CallID}
			if m.Text != "" {
				tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
			}
			if m.Error {
				tr.IsError = anthropic.Bool(true)
			}
			add(true, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			for _, th := range m.Thinking {
				switch {
				case th.Redacted != "":
					blocks = append(blocks, anthropic.NewRedactedThinkingBlock(th.Redacted))
				case th.Signature != "":
					blocks = append(blocks, anthropic.NewThinkingBlock(th.Signature, th.Text))
				}
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.Calls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, objectArgs(c.Args), c.Name))
			}
			add(false, blocks...)
		}
	}
	lm := msgs[len(msgs)-1]
	var last []anthropic.ContentBlockParamUnion
	if lm.OfUser != nil {
		last = lm.OfUser.Content
	} else {
		last = lm.OfAssistant.Content
	}
	switch b := last[len(last)-1]; {
	case b.OfText != nil:
		b.OfText.CacheControl = anthropic.NewCacheControlEphemeralParam()
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = anthropic.NewCacheControlEphemeralParam()
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	p.Messages = msgs
	var ropts []aoption.RequestOption
	if req.Temperature != nil && p.Thinking.OfEnabled == nil {
		ropts = append(ropts, aoption.WithJSONSet("temperature", *req.Temperature))
	}
	stream := client.Messages.NewStreaming(context.Background(), p, ropts...)
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("the SDK: %v", err)
	}
	stream.Close()
}

// TestModelsAsTheSDK: the model listings are asked for as the SDKs ask
// (Anthropic's page by page) and read as they read them.
func TestModelsAsTheSDK(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/models" && r.URL.Query().Get("after_id") == "":
			io.WriteString(w, `{"data":[{"id":"claude-a","max_input_tokens":200000,"type":"model"},{"id":"claude-b","type":"model"}],"has_more":true,"first_id":"claude-a","last_id":"claude-b"}`)
		case r.URL.Path == "/v1/models":
			io.WriteString(w, `{"data":[{"id":"claude-c","max_input_tokens":1000000,"type":"model"}],"has_more":false,"first_id":"claude-c","last_id":"claude-c"}`)
		case strings.HasPrefix(r.URL.Path, "/v1/models/"):
			io.WriteString(w, `{"id":"claude a/b","max_input_tokens":64000,"type":"model"}`)
		case r.URL.Path == "/v1/models/" || r.URL.Path == "/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-x","object":"model","owned_by":"me"},{"id":"qwen","object":"model","max_model_len":32768}]}`)
		}
	})
	hc := rec.client()
	ctx := context.Background()

	an := newAnthropic(config.Backend{Name: "a", Kind: config.KindAnthropic, BaseURL: rec.URL}, "k", hc)
	ours, err := an.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oursReq := rec.last(t)
	client := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(rec.URL+"/"),
		aoption.WithHTTPClient(hc), aoption.WithMaxRetries(0), aoption.WithAPIKey("k"), aoption.WithHeader("X-Api-Key", "k"))
	var sdk []Model
	pager := client.Models.ListAutoPaging(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1000)})
	for pager.Next() {
		m := pager.Current()
		sdk = append(sdk, Model{ID: m.ID, Window: int(m.MaxInputTokens)})
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	sameRequest(t, "anthropic models, second page", rec.last(t), oursReq, "X-Api-Key", "Anthropic-Version")
	if !reflect.DeepEqual(ours, sdk) || len(ours) != 3 {
		t.Errorf("anthropic models: ollie read %v, the SDK %v", ours, sdk)
	}
	w, err := an.ContextWindow(ctx, "claude a/b")
	if err != nil || w != 64000 {
		t.Errorf("anthropic window: %d, %v", w, err)
	}
	oursReq = rec.last(t)
	m, err := client.Models.Get(ctx, "claude a/b", anthropic.ModelGetParams{})
	if err != nil || m.MaxInputTokens != 64000 {
		t.Fatalf("the SDK's window: %v %v", m, err)
	}
	sameRequest(t, "anthropic model", rec.last(t), oursReq, "X-Api-Key", "Anthropic-Version")

	oa := newOpenAI(config.Backend{Name: "o", Kind: config.KindOpenAI, BaseURL: rec.URL}, "k", hc)
	ours, err = oa.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oursReq = rec.last(t)
	models := openai.NewModelService(option.WithBaseURL(rec.URL+"/"), option.WithHTTPClient(hc),
		option.WithMaxRetries(0), option.WithAPIKey("k"))
	page, err := models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameRequest(t, "openai models", rec.last(t), oursReq, "Authorization")
	sdk = nil
	for _, m := range page.Data {
		sdk = append(sdk, Model{ID: m.ID, Window: listedWindow(m.RawJSON())})
	}
	if !reflect.DeepEqual(ours, sdk) || len(ours) != 2 || ours[1].Window != 32768 {
		t.Errorf("openai models: ollie read %v, the SDK %v", ours, sdk)
	}
}
