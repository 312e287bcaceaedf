package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A Script says what the server answers. The turn for a chat request is
// chosen in this order: the first Rule that matches the request's last
// message; else the next of Turns (from the start again when Loop is set);
// else Default; else the text "ok".
type Script struct {
	Turns   []Turn   `json:"turns,omitempty"`
	Loop    bool     `json:"loop,omitempty"`
	Rules   []Rule   `json:"rules,omitempty"`
	Default *Turn    `json:"default,omitempty"`
	Latency Duration `json:"latency,omitempty"` // pause before each streamed piece, as a model's per-token time
	Chunk   int      `json:"chunk,omitempty"`   // characters per streamed piece of text or arguments; default 4
	// Instant writes the whole response at once with no pauses and no
	// flushes between events, for benchmarks.
	Instant bool `json:"instant,omitempty"`
	// NoRecord keeps no log of requests, so a long benchmark does not
	// grow the server's memory.
	NoRecord bool `json:"no_record,omitempty"`
	// Key, when set, is the API key every request must carry in its auth
	// header; a request without it gets the API's 401 error.
	Key    string  `json:"key,omitempty"`
	Models []Model `json:"models,omitempty"` // served by the model listings; default one model
	// EchoModels fails every model listing with an error that echoes the
	// request's headers (see Turn.EchoHeaders).
	EchoModels bool `json:"echo_models,omitempty"`

	dir string // directory of the script file, for RawFile
}

// A Turn is one response.
type Turn struct {
	Text     string `json:"text,omitempty"`     // streamed in pieces of Script.Chunk characters
	Thinking string `json:"thinking,omitempty"` // reasoning, streamed before the text
	Calls    []Call `json:"calls,omitempty"`    // tool calls, all in this one response
	Usage    *Usage `json:"usage,omitempty"`    // reported usage; nil: derived from the sizes
	// Stop is the stop reason to report: "" for the natural one (end of
	// turn, or tool use when there are calls), "max_tokens" for a reply
	// cut by the output limit, "refusal" for a refusal (OpenAI: the text
	// as delta.refusal; Anthropic: stop_reason refusal; Ollama has none).
	Stop string `json:"stop,omitempty"`

	// Failures. Status answers with that HTTP status in the API's own error
	// shape (RetryAfter, in seconds, goes in a Retry-After header); Overflow
	// answers with the API's context-overflow error; CutAfter drops the
	// connection after that many stream events; FailAfter sends the API's
	// in-stream error event (an overload) after that many events.
	Status     int  `json:"status,omitempty"`
	RetryAfter int  `json:"retry_after,omitempty"`
	Overflow   bool `json:"overflow,omitempty"`
	CutAfter   int  `json:"cut_after,omitempty"`
	FailAfter  int  `json:"fail_after,omitempty"`
	// EchoHeaders answers with an error (Status, default 400) whose
	// message repeats the request's headers, key included: a server that
	// echoes them back. Server.Echoes returns what it sent.
	EchoHeaders bool `json:"echo_headers,omitempty"`

	// Raw, or the contents of RawFile (relative to the script file), is
	// sent byte for byte as the body of the response: a recorded stream,
	// or with Status a recorded error.
	Raw     string `json:"raw,omitempty"`
	RawFile string `json:"raw_file,omitempty"`
	// Headers are added to the response.
	Headers map[string]string `json:"headers,omitempty"`
}

// A Call is one tool call of a Turn.
type Call struct {
	ID   string          `json:"id,omitempty"` // default: derived from the request number
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"` // a JSON object
}

// Usage is the token usage a Turn reports.
type Usage struct {
	Input      int `json:"input"` // input tokens not read from or written to a cache
	Output     int `json:"output"`
	CacheRead  int `json:"cache_read,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
}

// A Rule answers a request whose last message has Role (default "user")
// and text matching the regular expression If. In Then's text and call
// arguments, {{last}} stands for that message's text and {{1}}..{{9}} for
// the submatches of If (escaped as JSON inside arguments).
type Rule struct {
	Role string `json:"role,omitempty"`
	If   string `json:"if"`
	Then Turn   `json:"then"`

	re *regexp.Regexp
}

// A Model is one entry of the model listings.
type Model struct {
	ID      string `json:"id"`
	Context int    `json:"context,omitempty"` // context window; default 32768
}

// Duration is a time.Duration written in JSON as "20ms" or a number of
// nanoseconds.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		*d = Duration(v)
		return err
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	*d = Duration(n)
	return err
}

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// LoadScript reads a script file (JSON; unknown keys are errors).
func LoadScript(file string) (*Script, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	s.dir = filepath.Dir(file)
	return s, nil
}

// ParseScript parses a script from its JSON form.
func ParseScript(data []byte) (*Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// check compiles the rules and validates the turns.
func (s *Script) check() error {
	for i := range s.Rules {
		r := &s.Rules[i]
		re, err := regexp.Compile(r.If)
		if err != nil {
			return fmt.Errorf("rule %d: %v", i, err)
		}
		r.re = re
		if err := r.Then.check(); err != nil {
			return fmt.Errorf("rule %d: %v", i, err)
		}
	}
	for i := range s.Turns {
		if err := s.Turns[i].check(); err != nil {
			return fmt.Errorf("turn %d: %v", i, err)
		}
	}
	if s.Default != nil {
		if err := s.Default.check(); err != nil {
			return fmt.Errorf("default: %v", err)
		}
	}
	return nil
}

func (t *Turn) check() error {
	for i, c := range t.Calls {
		if c.Name == "" {
			return fmt.Errorf("call %d has no name", i)
		}
		if len(c.Args) > 0 && !json.Valid(c.Args) {
			return fmt.Errorf("call %d: arguments are not valid json", i)
		}
	}
	return nil
}

// raw returns the recorded bytes a turn replays, if any.
func (s *Script) raw(t *Turn) (string, error) {
	if t.RawFile == "" {
		return t.Raw, nil // not copied: a long stream is sent as it is
	}
	f := t.RawFile
	if !filepath.IsAbs(f) && s.dir != "" {
		f = filepath.Join(s.dir, f)
	}
	b, err := os.ReadFile(f)
	return string(b), err
}

// expand fills a rule's template: {{last}} and {{N}} submatches. In JSON
// arguments the substitutions are escaped as the inside of a JSON string.
func expand(tmpl, last string, sub []string, inJSON bool) string {
	if !strings.Contains(tmpl, "{{") {
		return tmpl
	}
	esc := func(s string) string {
		if !inJSON {
			return s
		}
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	pairs := []string{"{{last}}", esc(last)}
	for i := 1; i <= 9; i++ {
		v := ""
		if i < len(sub) {
			v = sub[i]
		}
		pairs = append(pairs, "{{"+strconv.Itoa(i)+"}}", esc(v))
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

// ExecuteCode returns a call of the execute_code tool that runs code in
// language, for scripting turns from Go.
func ExecuteCode(language, code string) Call {
	args, _ := json.Marshal(map[string]any{
		"steps": []map[string]string{{"code": code, "language": language}},
	})
	return Call{Name: "execute_code", Args: args}
}
