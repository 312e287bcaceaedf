package backend

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Reasoning is how much a model should think before it answers. The zero
// value sends nothing: the server's default. Each backend maps it onto
// its provider's parameter (see docs/backends.md), and sends none to a
// model its table knows cannot take one.
type Reasoning struct {
	// Effort is "low", "medium" or "high", or "off" to ask for no
	// reasoning where the provider can turn it off.
	Effort string
	// Budget is a number of reasoning tokens, for providers that take one
	// (Anthropic's budget_tokens, OpenRouter's reasoning.max_tokens); the
	// others get the effort it is nearest to.
	Budget int
}

// Efforts are the values Reasoning.Effort may take.
var Efforts = []string{"off", "low", "medium", "high"}

// IsZero reports whether r asks for nothing.
func (r Reasoning) IsZero() bool { return r.Effort == "" && r.Budget <= 0 }

// off reports whether r asks for no reasoning.
func (r Reasoning) off() bool { return r.Effort == "off" }

// effort is r as a level: the Effort given, else the level a Budget is
// nearest to.
func (r Reasoning) effort() string {
	switch {
	case r.Effort != "":
		return r.Effort
	case r.Budget <= 0:
		return ""
	case r.Budget <= 4096:
		return "low"
	case r.Budget <= 16384:
		return "medium"
	}
	return "high"
}

// budget is r as a number of tokens: the Budget given, else one for the
// effort. Anthropic takes no fewer than 1024.
func (r Reasoning) budget() int {
	if r.Budget > 0 {
		return max(r.Budget, 1024)
	}
	switch r.Effort {
	case "low":
		return 2048
	case "medium":
		return 8192
	case "high":
		return 24576
	}
	return 0
}

// reasoningWords are what a server says when it refuses a reasoning
// parameter: its name (OpenAI's "Unsupported parameter: 'reasoning_effort'",
// vLLM's "Extra inputs are not permitted" at reasoning_effort, Ollama's
// "... does not support thinking", Anthropic-compatible servers on
// thinking) and a word of refusal.
var (
	reasoningParams  = []string{"reasoning_effort", "reasoning", "thinking", "budget_tokens", "think"}
	reasoningRefusal = []string{"unsupported", "not supported", "does not support", "unknown", "unrecognized",
		"extra inputs", "not permitted", "invalid", "not allowed"}
)

// IsReasoningRejected reports whether err is a server's refusal of the
// request's reasoning parameter (a 400 or 422 that names it): the caller
// should send the request again without one, and remember that this
// model takes none.
func IsReasoningRejected(err error) bool {
	var e *APIError
	if !errors.As(err, &e) || e.Overflow {
		return false
	}
	if e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity {
		return false
	}
	// The message only: the code (invalid_request_error) names no
	// parameter and would match any bad request.
	text := strings.ToLower(e.Message)
	return containsAny(text, reasoningParams) && containsAny(text, reasoningRefusal)
}

// host returns the host name of the backend's base URL, lower case.
func (b *base) host(def string) string {
	u, err := url.Parse(b.baseURL(def))
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// bareModel is a model name without a "vendor/" prefix, lower case.
func bareModel(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

// openaiReasons reports whether a model of OpenAI itself takes
// reasoning_effort: the o-series and gpt-5 (but not gpt-5-chat); every
// other OpenAI model refuses it.
func openaiReasons(model string) bool {
	m := bareModel(model)
	switch {
	case strings.HasPrefix(m, "gpt-5") && !strings.Contains(m, "-chat"):
		return true
	case len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9':
		return !strings.HasPrefix(m, "o1-preview") && !strings.HasPrefix(m, "o1-mini")
	}
	return false
}

// anthropicThinks reports whether a Claude model takes extended
// thinking: from Claude 3.7 Sonnet on. Models of other names (served by
// Anthropic-compatible servers) are given the benefit of the doubt; a
// server that refuses is learned from (IsReasoningRejected).
func anthropicThinks(model string) bool {
	m := strings.ReplaceAll(bareModel(model), ".", "-")
	if !strings.HasPrefix(m, "claude-") {
		return true
	}
	for _, old := range []string{"claude-3-5", "claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-2", "claude-instant"} {
		if strings.HasPrefix(m, old) {
			return false
		}
	}
	return true
}
