package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// A Backend is one configured LLM endpoint. Its methods are safe for
// concurrent use: every session of the daemon may share one Backend.
type Backend interface {
	// Name is the configured name, Kind one of config.KindOpenAI,
	// config.KindAnthropic, config.KindOllama.
	Name() string
	Kind() string

	// Chat sends one request and streams the reply. It calls fn (which
	// may be nil) for each event, in order, on the calling goroutine; an
	// error from fn stops the stream and is returned as is. Chat returns
	// when the response is complete, with the assembled reply. On error,
	// the reply, if not nil, holds what arrived before the failure.
	//
	// Chat never retries. Errors carry an errs.Kind for the caller's
	// retry decision (see the package documentation).
	Chat(ctx context.Context, req *Request, fn func(Event) error) (*Reply, error)

	// Models lists the models the endpoint offers.
	Models(ctx context.Context) ([]Model, error)

	// ContextWindow returns how many tokens a request to model can hold:
	// the configured context_window if set, else what the server reports
	// (cached after the first answer), else the known window of a hosted
	// model. For Ollama it is the num_ctx sent when Request.NumCtx is 0.
	// An unknown window is an error of kind NotExist.
	ContextWindow(ctx context.Context, model string) (int, error)
}

// Role is the author of a Message.
type Role string

const (
	RoleSystem    Role = "system" // only in Request.System; kept for callers' own records
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // the result of a tool call
)

// A Message is one entry of the conversation, the same for every backend.
type Message struct {
	Role  Role       `json:"role"`
	Text  string     `json:"text,omitempty"`
	Calls []ToolCall `json:"calls,omitempty"` // assistant: tool calls, in order
	// CallID is, for a tool result, the ToolCall.ID it answers.
	CallID string `json:"call_id,omitempty"`
	// Error marks a tool result that reports a failure.
	Error bool `json:"error,omitempty"`
	// Thinking is, for an assistant message, the reasoning blocks a
	// provider wants back in later requests (Anthropic's signed thinking),
	// in order, byte for byte. It is never part of Text: the answer.
	Thinking []Thinking `json:"thinking,omitempty"`
	// Refused marks an assistant message that is a refusal (OpenAI's
	// delta.refusal, Anthropic's stop_reason refusal).
	Refused bool `json:"refused,omitempty"`
}

// A Thinking block is one piece of a model's reasoning that the provider
// signs and wants back unchanged: Anthropic's thinking (Text and
// Signature) or redacted_thinking (Redacted, opaque data).
type Thinking struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
}

// A ToolCall is one call the model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is always valid JSON: normally an object; arguments the model
	// wrote that are not valid JSON arrive as a JSON string holding the
	// raw text, for the caller to report back.
	Args json.RawMessage `json:"args"`
}

// A Tool is a tool offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"` // JSON Schema of the arguments: an object schema
}

// A Request is one model call.
type Request struct {
	Model       string // "" means the backend's configured default
	System      string
	Messages    []Message
	Tools       []Tool
	Temperature *float64 // nil: the server's default
	MaxTokens   int      // output limit; 0: the server's default (Anthropic, which requires one: the model's maximum)
	// Reasoning is how much the model should think; the zero value sends
	// nothing.
	Reasoning Reasoning
	// NumCtx is the context window Ollama should allocate; 0 means the
	// value ContextWindow reports. Other backends ignore it.
	NumCtx int
}

// Usage is the token count of one response, or a sum of them.
type Usage struct {
	Input      int  `json:"input"` // input tokens neither read from nor written to a cache
	Output     int  `json:"output"`
	CacheRead  int  `json:"cache_read"`
	CacheWrite int  `json:"cache_write"`
	Estimated  bool `json:"estimated,omitempty"` // some count is an estimate: the server reported none
}

// Prompt is the whole input: what occupied the context window.
func (u Usage) Prompt() int { return u.Input + u.CacheRead + u.CacheWrite }

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.Input += v.Input
	u.Output += v.Output
	u.CacheRead += v.CacheRead
	u.CacheWrite += v.CacheWrite
	u.Estimated = u.Estimated || v.Estimated
}

// StopReason says why a response ended.
type StopReason string

const (
	StopEnd       StopReason = "end"        // the model finished its turn
	StopToolUse   StopReason = "tool_use"   // the model wants its tool calls run
	StopMaxTokens StopReason = "max_tokens" // cut by the output limit
	StopRefused   StopReason = "refused"    // a content filter or refusal
	StopOther     StopReason = "other"
)

// EventKind tells what an Event carries.
type EventKind uint8

const (
	EventText     EventKind = iota + 1 // Text: a piece of the reply
	EventThinking                      // Text: a piece of the model's reasoning, never part of the answer
	EventToolCall                      // Call: one complete tool call
	EventUsage                         // Usage: the response's usage, once, just before Chat returns
	EventRefusal                       // Text: a piece of a refusal (OpenAI's delta.refusal)
)

// An Event is one step of a streamed response.
type Event struct {
	Kind  EventKind
	Text  string
	Call  ToolCall
	Usage Usage
}

// A Reply is a complete response.
type Reply struct {
	Message Message // role assistant: the whole text and the tool calls
	Usage   Usage
	Stop    StopReason
	Model   string // the model that answered, as the server names it
	// Cost is what the request cost, when Priced says the backend knows:
	// a cost the server reported (OpenRouter's usage.cost) or 0 for a
	// local server. Otherwise the caller prices Usage (Cost, PriceOf).
	Cost   float64
	Priced CostSource
}

// CostSource says where a cost comes from.
type CostSource string

const (
	CostUnknown  CostSource = ""        // no price known
	CostReported CostSource = "backend" // the server reported it
	CostLocal    CostSource = "local"   // a local server: free
	CostTable    CostSource = "table"   // the price table (set by callers of Cost)
)

// A Model is one model an endpoint offers.
type Model struct {
	ID     string
	Window int // context window in tokens; 0 if the listing does not say
}

// New returns the backend cfg describes. key is its API key ("" for
// none); it is only ever sent in a request header. hc is the HTTP client
// to use; nil means a shared default with no overall timeout (streams are
// long) but bounded connection and header waits.
func New(cfg config.Backend, key string, hc *http.Client) (Backend, error) {
	if hc == nil {
		hc = defaultClient()
	}
	switch cfg.Kind {
	case config.KindOpenAI:
		return newOpenAI(cfg, key, hc), nil
	case config.KindAnthropic:
		return newAnthropic(cfg, key, hc), nil
	case config.KindOllama:
		return newOllama(cfg, key, hc), nil
	}
	return nil, errs.E(errs.Invalid, "backend "+cfg.Name+": unknown kind "+cfg.Kind)
}

var defaultClient = sync.OnceValue(func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// A local server may load a model before it answers; a hosted one
	// that sends no header for this long is gone.
	t.ResponseHeaderTimeout = 10 * time.Minute
	// Many sessions ask one server at once; with the default two idle
	// connections per host, all but two of a burst's requests paid a new
	// connection (and left one in TIME_WAIT). An idle one costs a few KB.
	t.MaxIdleConnsPerHost = 32
	return &http.Client{Transport: t}
})

// base holds what every backend shares.
type base struct {
	cfg config.Backend
	hc  *http.Client

	// mu guards windows, the context windows learned from the server.
	mu      sync.Mutex
	windows map[string]int
}

func (b *base) Name() string { return b.cfg.Name }
func (b *base) Kind() string { return b.cfg.Kind }

// model resolves the model of a request.
func (b *base) model(m string) (string, error) {
	if m == "" {
		m = b.cfg.Model
	}
	if m == "" {
		return "", errs.E(errs.Invalid, "backend "+b.cfg.Name+": no model given and no default model configured")
	}
	return m, nil
}

// window returns the context window of model from, in order, the
// configuration, the cache, lookup (which asks the server; it may return
// 0 for unknown) and the table of known models.
func (b *base) window(ctx context.Context, model string, lookup func(context.Context, string) (int, error)) (int, error) {
	if b.cfg.ContextWindow > 0 {
		return b.cfg.ContextWindow, nil
	}
	b.mu.Lock()
	n, ok := b.windows[model]
	b.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := lookup(ctx, model)
	if err != nil && !errs.Is(err, errs.NotExist) {
		return 0, err
	}
	if n == 0 {
		if info, ok := lookupModel(model); ok && info.Window > 0 {
			n = info.Window
		}
	}
	if n == 0 {
		// err, if any, says why the server did not tell: an unknown model.
		return 0, errs.E(errs.NotExist, "backend "+b.cfg.Name+": context window of "+model+" unknown; set context_window in ollie.json", err)
	}
	b.mu.Lock()
	if b.windows == nil {
		b.windows = map[string]int{}
	}
	b.windows[model] = n
	b.mu.Unlock()
	return n, nil
}

// local reports whether the backend is a local Ollama (anywhere but
// ollama.com), whose requests cost nothing. OpenAI-compatible servers on
// this machine are not assumed free: some proxy a hosted model.
func (b *base) local(def string) bool {
	if b.cfg.Kind != config.KindOllama {
		return false
	}
	u, err := url.Parse(b.baseURL(def))
	if err != nil {
		return false
	}
	host := u.Hostname()
	return host != "ollama.com" && !strings.HasSuffix(host, ".ollama.com")
}

// baseURL returns the configured base URL, or def, without a trailing
// slash.
func (b *base) baseURL(def string) string {
	u := b.cfg.BaseURL
	if u == "" {
		u = def
	}
	return strings.TrimRight(u, "/")
}
