// Package redact removes secrets from text before it enters the tree or a
// log (NAMESPACE rule 5: no key appears anywhere, not even when a backend
// echoes it back).
//
// A Redactor is built once, in main or the daemon, from the configuration:
//
//	r := redact.FromConfig(cfg)       // every configured key value
//	line = r.String(line)             // keys and credential headers -> [redacted]
//	err = r.Error(err)                // same text, same Kind, same chain
//	logger := r.Logger(logger)        // every log line through r
//
// Two kinds of rule apply, in one call:
//
//   - literal secrets: every configured key value (and any other secret
//     handed to New), wherever it appears;
//   - patterns: the values of credential headers and parameters in text
//     and JSON, whatever their case (Authorization: Bearer/Basic ...,
//     X-Api-Key, api-key, x-goog-api-key, token=, password ...), and bare
//     provider keys (sk-..., sk-ant-..., AIza..., ghp_...).
//
// Text without a secret comes back as the same string, without copying:
// the redactor runs on every chunk of streamed chat.
//
// A nil *Redactor applies the patterns only, so code paths built without
// a configuration still hide credential headers.
package redact

import (
	"slices"
	"strings"
	"unicode/utf8"

	"ollie.dev/ollie/internal/config"
)

// Marker replaces every secret.
const Marker = "[redacted]"

// minSecret is the shortest literal secret redacted: a key of one to three
// bytes would blank every occurrence of those letters in every chat.
const minSecret = 4

// fragLen bounds the needle of the search for a secret: strings.Index is
// vectorized for short needles and falls back to Rabin-Karp for long ones.
// The end of a key is its random part, rarely seen in other text.
const fragLen = 32

// A Redactor hides a fixed set of secrets and the credential patterns. It
// is immutable and safe for concurrent use.
type Redactor struct {
	secrets []string          // longest first, so a key never hides part of a longer one
	frags   []string          // the last fragLen bytes of each secret, to find them fast
	lit     *strings.Replacer // secrets -> Marker; nil when there are none
	keyEnv  map[string]bool   // variables named by api_key_env: never passed on
}

// New returns a redactor for the given secret values (empty and very short
// ones are ignored) plus the patterns.
func New(secrets ...string) *Redactor {
	r := &Redactor{keyEnv: map[string]bool{}}
	for _, s := range secrets {
		if len(s) >= minSecret && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	if len(r.secrets) > 0 {
		pairs := make([]string, 0, 2*len(r.secrets))
		for _, s := range r.secrets {
			pairs = append(pairs, s, Marker)
			r.frags = append(r.frags, fragment(s))
		}
		r.lit = strings.NewReplacer(pairs...)
	}
	return r
}

// FromConfig returns the redactor of a configuration: every key value it
// read (api_key_env values at startup, api_key) and extra, such as the 9P
// token. The variables that api_key_env names are remembered for Env.
func FromConfig(c *config.Config, extra ...string) *Redactor {
	var secrets []string
	for _, v := range c.Secrets {
		secrets = append(secrets, v)
	}
	r := New(append(secrets, extra...)...)
	for _, b := range c.Backends {
		if b.APIKeyEnv != "" {
			r.keyEnv[b.APIKeyEnv] = true
		}
	}
	return r
}

// String returns s with every secret replaced by Marker. When s holds
// none, it is returned as is.
func (r *Redactor) String(s string) string {
	return scrubPatterns(r.Keys(s))
}

// Keys replaces the configured secrets only, not the patterns. It is for
// the history, the model's working memory: there a pattern would rewrite
// what the model read of the user's files (a config file's password
// line), and the model would write the marker back into them. Credentials
// that a backend echoes never reach the history unredacted: the backend's
// errors are redacted where they are made.
func (r *Redactor) Keys(s string) string {
	if r == nil || r.lit == nil {
		return s
	}
	for _, f := range r.frags {
		if strings.Contains(s, f) {
			return r.lit.Replace(s)
		}
	}
	return s
}

// Bytes is String for a byte slice. It returns b itself when b holds no
// secret.
func (r *Redactor) Bytes(b []byte) []byte {
	s := string(b)
	if out := r.String(s); out != s {
		return []byte(out)
	}
	return b
}

// KeysBytes is Keys for a byte slice.
func (r *Redactor) KeysBytes(b []byte) []byte {
	s := string(b)
	if out := r.Keys(s); out != s {
		return []byte(out)
	}
	return b
}

// Secrets reports how many literal secrets r hides (for tests and stats).
func (r *Redactor) Secrets() int {
	if r == nil {
		return 0
	}
	return len(r.secrets)
}

// Patterns applies the credential patterns alone, for code that has no
// configuration at hand (the backend's error constructor).
func Patterns(s string) string { return scrubPatterns(s) }

// Cut shortens s to at most n bytes and marks the cut with "...". It never
// cuts inside a word, so a key is either whole, and redacted, or gone,
// nor inside a UTF-8 sequence.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && (valueByte[s[i-1]] && valueByte[s[i]] || !utf8.RuneStart(s[i])) {
		i--
	}
	return s[:i] + "..."
}

// Held returns how many bytes at the end of s may be the start of a
// configured key: a stream writer keeps them back until the next piece
// shows whether the key follows, so a key split across two pieces is
// still found whole.
func (r *Redactor) Held(s string) int {
	if r == nil {
		return 0
	}
	held := 0
	for _, sec := range r.secrets {
		// The earliest start is the longest tail; only a tail longer
		// than the one held already matters.
		for i := max(0, len(s)-len(sec)+1); i < len(s)-held; i++ {
			j := strings.IndexByte(s[i:len(s)-held], sec[0])
			if j < 0 {
				break
			}
			i += j
			if strings.HasPrefix(sec, s[i:]) {
				held = len(s) - i
				break
			}
		}
	}
	return held
}

// Unheld is what a stream writer writes of a held tail when the stream
// ends without the rest: the start of a key of minSecret bytes or more is
// hidden too.
func (r *Redactor) Unheld(tail string) string {
	if len(tail) >= minSecret && r.Held(tail) == len(tail) {
		return Marker
	}
	return tail
}

// common are the bytes of English prose, most frequent first.
const common = " etaoinshrdlcumwfgypbvk"

// fragment picks the needle by which a secret is searched: up to fragLen
// bytes starting at its byte least common in prose, as strings.Index
// jumps from one occurrence of its needle's first byte to the next.
func fragment(s string) string {
	best, score := 0, len(common)+1
	for i := 0; i <= len(s)-min(len(s), minSecret); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A' // case does not make a letter rare: sentences start with one
		}
		if sc := strings.IndexByte(common, c) + 1; sc < score {
			best, score = i, sc
		}
	}
	return s[best:min(len(s), best+fragLen)]
}
