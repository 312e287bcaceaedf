package backend

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnreachable matches, with errors.Is, an error that says nothing
// answers at the backend's address: connection refused, no such host, no
// route. Retrying does not help; the user must start or configure a
// server.
var ErrUnreachable = errors.New("unreachable")

// IsUnreachable reports whether err says the backend cannot be reached.
func IsUnreachable(err error) bool { return errors.Is(err, ErrUnreachable) }

// unreachableError says what unreachable found; it matches ErrUnreachable.
type unreachableError string

func (e unreachableError) Error() string        { return string(e) }
func (e unreachableError) Is(target error) bool { return target == ErrUnreachable }

// unreachable returns, for a failure to connect, the text that names the
// address and the fix; "" for any other error.
func unreachable(err error) string {
	var why string
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && !dns.IsTimeout && !dns.IsTemporary:
		why = "no such host " + dns.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		why = "no route to host"
	default:
		return ""
	}
	where := ""
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.Path, u.RawQuery, u.User = "", "", nil
			where = " at " + u.String()
		}
	}
	return "nothing answers" + where + " (" + why + "); start the server (for Ollama: ollama serve), " +
		"set OLLAMA_HOST, or configure a backend in ollie.json or the environment"
}

// resetHeaders pair each provider's rate-limit reset header with the
// header that says how much of that limit is left.
var resetHeaders = [][2]string{
	{"x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"}, // OpenAI, Groq: "1s", "6m0s"
	{"x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"},
	{"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-requests-remaining"}, // RFC 3339
	{"anthropic-ratelimit-tokens-reset", "anthropic-ratelimit-tokens-remaining"},
	{"anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-input-tokens-remaining"},
	{"anthropic-ratelimit-output-tokens-reset", "anthropic-ratelimit-output-tokens-remaining"},
	{"x-ratelimit-reset", "x-ratelimit-remaining"}, // OpenRouter: Unix time in milliseconds
}

// resetWait is how long until the exhausted rate limits of a response
// reset: the latest reset among the limits with nothing left (or, when
// no remaining count is sent, among all), 0 if no header says.
func resetWait(h http.Header, now time.Time) time.Duration {
	var wait time.Duration
	for _, p := range resetHeaders {
		v := h.Get(p[0])
		if v == "" {
			continue
		}
		if rem := h.Get(p[1]); rem != "" && strings.TrimSpace(rem) != "0" {
			continue
		}
		wait = max(wait, parseReset(v, now))
	}
	return wait
}

// parseReset reads a reset header: a duration ("1m30s", "20ms"), an RFC
// 3339 time, or a Unix time in seconds or milliseconds.
func parseReset(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return max(0, d)
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return max(0, t.Sub(now))
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		t := time.Unix(n, 0)
		if n > 1e11 {
			t = time.UnixMilli(n)
		}
		return max(0, t.Sub(now))
	}
	return 0
}
