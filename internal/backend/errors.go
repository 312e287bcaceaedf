package backend

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/redact"
)

// ErrContextOverflow matches, with errors.Is, an error that says the
// request did not fit the model's context window.
var ErrContextOverflow = errors.New("context window exceeded")

// IsContextOverflow reports whether err says the request did not fit the
// model's context window: the caller should compact and try again.
func IsContextOverflow(err error) bool { return errors.Is(err, ErrContextOverflow) }

// RetryAfter returns how long the server asked the caller to wait before
// trying again (a Retry-After header), if it said.
func RetryAfter(err error) (time.Duration, bool) {
	var e *APIError
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}

// An APIError is the detail of an error response or of an error event in
// a stream. Backends return it wrapped in an *errs.Error whose Kind
// classifies it.
type APIError struct {
	Backend    string        // configured name
	Status     int           // HTTP status; 0 for an error event inside a stream
	Code       string        // the provider's error type or code, e.g. rate_limit_error
	Message    string        // the provider's message, as it wrote it
	RetryAfter time.Duration // from Retry-After or Retry-After-Ms; 0 if absent
	Overflow   bool          // the request did not fit the context window
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Backend)
	if e.Status != 0 {
		b.WriteString(": http ")
		b.WriteString(strconv.Itoa(e.Status))
	}
	status := "http"
	if e.Status != 0 {
		status = strconv.Itoa(e.Status)
	}
	if e.Code != "" && e.Code != status {
		b.WriteString(": ")
		b.WriteString(e.Code)
	}
	if msg := trimPrefixes(e.Message, status+": ", e.Code+": "); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	return b.String()
}

// trimPrefixes drops what the error text already says: providers often
// repeat the status or code at the start of the message ("429: ...").
func trimPrefixes(msg string, prefixes ...string) string {
	for _, p := range prefixes {
		if len(p) > 2 {
			msg = strings.TrimPrefix(msg, p)
		}
	}
	return msg
}

// Is makes errors.Is(err, ErrContextOverflow) work.
func (e *APIError) Is(target error) bool { return target == ErrContextOverflow && e.Overflow }

// classify completes e and wraps it with the Kind that decides retries.
// A message may echo the request's headers: it is cut without splitting a
// key and its credential headers redacted here, at the one constructor;
// Redacting removes the configured keys themselves.
func classify(e *APIError) error {
	e.Message = redact.Patterns(redact.Cut(e.Message, 600))
	if e.Status == http.StatusOK {
		e.Status = 0 // an error event inside a stream that began well
	}
	text := strings.ToLower(e.Code + " " + e.Message)
	switch e.Status {
	case 0, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		e.Overflow = e.Overflow || containsAny(text, overflowWords)
	}
	return &errs.Error{Kind: kindOf(e, text), Err: e}
}

// overflowWords are the parts of the context-overflow messages of OpenAI
// (context_length_exceeded), vLLM and Ollama ("maximum context length"),
// llama.cpp (exceed_context_size_error, "available context size") and
// Anthropic ("prompt is too long", "exceed context limit").
var overflowWords = []string{
	"context_length_exceeded", "exceed_context_size", "context length", "context size",
	"context window", "context limit", "prompt is too long",
}

// noToolWords are the messages of servers whose model cannot call tools
// (Ollama: "... does not support tools"): the caller may fall back to the
// fenced form of ParseFencedToolCalls.
var noToolWords = []string{"does not support tools", "tools are not supported", "tool use is not supported", "does not support function calling"}

func kindOf(e *APIError, text string) errs.Kind {
	switch {
	case e.Overflow:
		return errs.TooLarge
	case containsAny(text, []string{"insufficient_quota", "billing_error"}):
		// A 429 that waiting will not cure.
		return errs.Permission
	case containsAny(text, noToolWords):
		return errs.Unsupported
	}
	switch s := e.Status; {
	case s == http.StatusTooManyRequests:
		return errs.RateLimited
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return errs.Permission
	case s == http.StatusNotFound:
		return errs.NotExist
	case s == http.StatusRequestTimeout:
		return errs.Timeout
	case s == http.StatusRequestEntityTooLarge:
		return errs.TooLarge
	case s >= 500:
		return errs.Unavailable // includes Anthropic's 529 overloaded
	case s >= 400:
		return errs.Invalid
	}
	// An error event inside a stream: by the provider's error type.
	switch strings.ToLower(e.Code) {
	case "rate_limit_error", "rate_limit_exceeded":
		return errs.RateLimited
	case "authentication_error", "permission_error", "invalid_api_key":
		return errs.Permission
	case "invalid_request_error":
		return errs.Invalid
	case "not_found_error":
		return errs.NotExist
	case "request_too_large":
		return errs.TooLarge
	case "timeout_error":
		return errs.Timeout
	}
	// Otherwise a stream that failed midway: overloaded_error, api_error,
	// server_error, a crashed runner. Worth another try.
	return errs.Unavailable
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// retryAfter reads the wait a response asks for: Retry-After-Ms (OpenAI),
// else Retry-After in seconds or as an HTTP date, else the providers'
// rate-limit reset headers (resetWait).
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if d := headerRetryAfter(h); d > 0 {
		return d
	}
	return resetWait(h, time.Now())
}

func headerRetryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// transportError classifies a failure to reach the server or to read its
// stream: cancelled by the caller, timed out, or the server unavailable.
func transportError(name string, ctx context.Context, err error) error {
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return errs.E(errs.Interrupted, name, err)
	case errors.Is(err, context.DeadlineExceeded):
		return errs.E(errs.Timeout, name, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errs.E(errs.Timeout, name, err)
	}
	if u := unreachable(err); u != "" {
		return errs.E(errs.Unavailable, name, unreachableError(u))
	}
	return errs.E(errs.Unavailable, name, err)
}

// streamCut is the error of a stream that ended without its end marker.
func streamCut(name string) error {
	return errs.E(errs.Unavailable, name+": stream ended before the response was complete")
}
