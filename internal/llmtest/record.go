package llmtest

import (
	"encoding/json"
	"net/http"
	"strings"
)

// A Request is what the server received, kept so tests can assert what a
// client sent. The raw parts are always set; the parsed parts are set for
// chat requests.
type Request struct {
	API    string // "openai", "anthropic" or "ollama"
	Method string
	Path   string
	Query  string // the raw query string
	Header http.Header
	Body   []byte

	Model       string
	System      string
	Messages    []Message
	Tools       []Tool
	MaxTokens   int
	Temperature *float64
	NumCtx      int  // Ollama options.num_ctx
	Stream      bool // the client asked for a stream
	// IncludeUsage is OpenAI's stream_options.include_usage; usage is
	// only streamed when it is set, as the real API does.
	IncludeUsage bool
	// CacheMarks counts Anthropic cache_control markers in the request.
	CacheMarks int
}

// A Message is one message of a chat request, in the same shape for all
// three APIs: a tool result is a message of role "tool".
type Message struct {
	Role   string
	Text   string
	Calls  []Call
	CallID string // tool results: the call answered (Ollama: the tool name)
}

// A Tool is one tool offered in a chat request.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// Last returns the text of the last message and its role.
func (r *Request) Last() (role, text string) {
	if len(r.Messages) == 0 {
		return "", ""
	}
	m := r.Messages[len(r.Messages)-1]
	return m.Role, m.Text
}

// parse fills the parsed parts from Body for the chat endpoints.
func (r *Request) parse() error {
	switch r.API {
	case "openai":
		return r.parseOpenAI()
	case "anthropic":
		return r.parseAnthropic()
	case "ollama":
		return r.parseOllama()
	}
	return nil
}

func (r *Request) parseOpenAI() error {
	var b struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools               []functionTool `json:"tools"`
		MaxTokens           int            `json:"max_tokens"`
		MaxCompletionTokens int            `json:"max_completion_tokens"`
		Temperature         *float64       `json:"temperature"`
		Stream              bool           `json:"stream"`
		StreamOptions       struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return err
	}
	r.Model, r.Temperature, r.Stream = b.Model, b.Temperature, b.Stream
	r.MaxTokens = max(b.MaxTokens, b.MaxCompletionTokens)
	r.IncludeUsage = b.StreamOptions.IncludeUsage
	for _, m := range b.Messages {
		msg := Message{Role: m.Role, Text: contentText(m.Content), CallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.Calls = append(msg.Calls, Call{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
		}
		if m.Role == "system" || m.Role == "developer" {
			r.System += msg.Text
			continue
		}
		r.Messages = append(r.Messages, msg)
	}
	r.addTools(b.Tools)
	return nil
}

// functionTool is a tool as OpenAI and Ollama requests carry it.
type functionTool struct {
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (r *Request) addTools(tools []functionTool) {
	for _, t := range tools {
		r.Tools = append(r.Tools, Tool{t.Function.Name, t.Function.Description, t.Function.Parameters})
	}
}

func (r *Request) parseAnthropic() error {
	type block struct {
		Type         string          `json:"type"`
		Text         string          `json:"text"`
		ID           string          `json:"id"`
		Name         string          `json:"name"`
		Input        json.RawMessage `json:"input"`
		ToolUseID    string          `json:"tool_use_id"`
		Content      json.RawMessage `json:"content"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	var b struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"input_schema"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"tools"`
		MaxTokens   int      `json:"max_tokens"`
		Temperature *float64 `json:"temperature"`
		Stream      bool     `json:"stream"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return err
	}
	r.Model, r.MaxTokens, r.Temperature, r.Stream = b.Model, b.MaxTokens, b.Temperature, b.Stream
	r.System = contentText(b.System)
	r.CacheMarks = strings.Count(string(b.System), `"cache_control"`)
	for _, m := range b.Messages {
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			r.Messages = append(r.Messages, Message{Role: m.Role, Text: contentText(m.Content)})
			continue
		}
		msg := Message{Role: m.Role}
		for _, bl := range blocks {
			if len(bl.CacheControl) > 0 {
				r.CacheMarks++
			}
			switch bl.Type {
			case "text":
				msg.Text += bl.Text
			case "tool_use":
				msg.Calls = append(msg.Calls, Call{ID: bl.ID, Name: bl.Name, Args: bl.Input})
			case "tool_result":
				// Each result becomes a message of its own, as in the other APIs.
				r.Messages = append(r.Messages, Message{Role: "tool", Text: contentText(bl.Content), CallID: bl.ToolUseID})
			}
		}
		if msg.Text != "" || len(msg.Calls) > 0 {
			r.Messages = append(r.Messages, msg)
		}
	}
	for _, t := range b.Tools {
		if len(t.CacheControl) > 0 {
			r.CacheMarks++
		}
		r.Tools = append(r.Tools, Tool{t.Name, t.Description, t.InputSchema})
	}
	return nil
}

func (r *Request) parseOllama() error {
	var b struct {
		Model    string `json:"model"`
		Messages []struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			ToolName  string `json:"tool_name"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools   []functionTool `json:"tools"`
		Stream  *bool          `json:"stream"`
		Options struct {
			NumCtx      int      `json:"num_ctx"`
			NumPredict  int      `json:"num_predict"`
			Temperature *float64 `json:"temperature"`
		} `json:"options"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		return err
	}
	r.Model, r.NumCtx, r.MaxTokens = b.Model, b.Options.NumCtx, b.Options.NumPredict
	r.Temperature = b.Options.Temperature
	r.Stream = b.Stream == nil || *b.Stream // Ollama streams unless told not to
	for _, m := range b.Messages {
		msg := Message{Role: m.Role, Text: m.Content, CallID: m.ToolName}
		for _, c := range m.ToolCalls {
			msg.Calls = append(msg.Calls, Call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments})
		}
		if m.Role == "system" {
			r.System += m.Content
			continue
		}
		r.Messages = append(r.Messages, msg)
	}
	r.addTools(b.Tools)
	return nil
}

// contentText flattens a content field that is either a string or a list
// of blocks with a "text" member.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}
