package redact

import (
	"slices"
	"strings"
)

// The scan never looks at every byte: it jumps, with the vectorized
// strings.IndexByte and strings.Index, to the separators ':' and '=' and
// to the fixed prefixes of keys, and looks around those only. Prose
// without a separator costs a few memchr passes.

// headers are credential header and parameter names, lower case, matched
// whatever the case of the text as the end of the word before ':' or '='
// (X-Api-Key and x-goog-api-key end in api-key, Proxy-Authorization in
// authorization, X-Auth-Token and access_token in token). min is the
// shortest value redacted: shorter ones are prose, not keys.
var headers = []struct {
	name   string
	min    int
	scheme bool // the value may start with a scheme word: Bearer, Basic
}{
	{"authorization", 1, true},
	{"api-key", 1, false},
	{"api_key", 1, false},
	{"apikey", 1, false},
	{"token", 8, false},
	{"secret", 4, false},
	{"password", 4, false},
	{"passwd", 4, false},
}

// params are query parameters that are credentials only as parameters
// (?key=, &sig=): as words they are too common.
var params = []string{"key", "sig"}

// prefixes are provider keys recognized by their start, case sensitive.
var prefixes = []struct {
	p    string
	min  int
	rare int // index in p of a byte rare in prose, searched for
}{
	{"sk-", 20, 2},  // OpenAI sk-..., sk-proj-..., Anthropic sk-ant-...
	{"AIza", 30, 0}, // Google
	{"ghp_", 30, 3},
	{"github_pat_", 30, 6},
	{"xoxb-", 20, 4},
	{"xoxp-", 20, 4},
}

// minBearer is the shortest value after a bare "Bearer " that is taken for
// a token ("bearer tokens" is prose).
const minBearer = 16

// valueByte is a byte that may be part of a key, token or base64 value.
var valueByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "-._~+/=%" {
		t[c] = true
	}
	return t
}()

type span struct{ start, end int }

// scrubPatterns replaces the value of every credential found. It returns s
// itself when there is none.
func scrubPatterns(s string) string {
	var sp []span
	add := func(start, end, min int) {
		if end-start >= min && end > start && !isMarker(s, start) {
			sp = append(sp, span{start, end})
		}
	}
	for off := 0; ; {
		k := strings.IndexByte(s[off:], ':')
		if k < 0 {
			break
		}
		p := off + k
		if strings.HasPrefix(s[p:], "://") {
			if start, end := userinfo(s, p+3); end > start {
				add(start, end, 1)
			}
		} else {
			header(s, p, add)
		}
		off = p + 1
	}
	for off := 0; ; {
		k := strings.IndexByte(s[off:], '=')
		if k < 0 {
			break
		}
		p := off + k
		header(s, p, add)
		param(s, p, add)
		off = p + 1
	}
	for _, pr := range prefixes {
		// Jump to the prefix's rare byte ('-', '_', 'A'), not to its first
		// one: memchr for a common letter stops at every word.
		c := pr.p[pr.rare]
		for off := 0; ; {
			k := strings.IndexByte(s[off:], c)
			if k < 0 {
				break
			}
			i := off + k - pr.rare
			off += k + 1
			if i < 0 || !strings.HasPrefix(s[i:], pr.p) {
				continue
			}
			if i == 0 || !valueByte[s[i-1]] { // not inside a longer word: task-...
				add(i, valueEnd(s, i), pr.min)
			}
		}
	}
	for _, w := range []string{"Bearer ", "bearer ", "BEARER "} {
		for off := 0; ; {
			k := strings.Index(s[off:], w)
			if k < 0 {
				break
			}
			j := skip(s, off+k+len(w), " ")
			add(j, valueEnd(s, j), minBearer)
			off += k + len(w)
		}
	}
	if len(sp) == 0 {
		return s
	}
	return replaceSpans(s, sp)
}

// header adds the value after the separator at p when the word before it
// names a credential header.
func header(s string, p int, add func(start, end, min int)) {
	q := p
	for q > 0 && strings.IndexByte(` "'\`, s[q-1]) >= 0 {
		q--
	}
	for _, h := range headers {
		if q < len(h.name) || !hasPrefixFold(s[q-len(h.name):], h.name) {
			continue
		}
		j := skip(s, p+1, " \t\"'\\[")
		start, end := j, valueEnd(s, j)
		if h.scheme && end < len(s) && s[end] == ' ' && end-start <= 16 && letters(s[start:end]) {
			// The scheme word stays; what follows it goes.
			start = skip(s, end, " ")
			end = valueEnd(s, start)
		}
		add(start, end, h.min)
		return
	}
}

// param adds the value of ?key= or &sig= at the '=' at p.
func param(s string, p int, add func(start, end, min int)) {
	for _, n := range params {
		i := p - len(n)
		if i < 1 || !hasPrefixFold(s[i:], n) {
			continue
		}
		if c := s[i-1]; c == '?' || c == '&' || c == ';' {
			add(p+1, valueEnd(s, p+1), 1)
			return
		}
	}
}

// userinfo returns the secret of ://user:secret@host, whose user part
// starts at j: from the first ':' to the '@'.
func userinfo(s string, j int) (start, end int) {
	k := j
	for k < len(s) && strings.IndexByte("@/ \t\n\"'", s[k]) < 0 {
		k++
	}
	if k >= len(s) || s[k] != '@' {
		return 0, 0
	}
	colon := strings.IndexByte(s[j:k], ':')
	if colon < 0 {
		return 0, 0
	}
	return j + colon + 1, k
}

func replaceSpans(s string, sp []span) string {
	slices.SortFunc(sp, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, x := range sp {
		if x.start < last {
			continue // inside a span already replaced
		}
		b.WriteString(s[last:x.start])
		b.WriteString(Marker)
		last = x.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// isMarker reports whether the value at start is the inside of a Marker
// left by an earlier pass: redacting twice changes nothing.
func isMarker(s string, start int) bool {
	return start > 0 && strings.HasPrefix(s[start-1:], Marker)
}

func valueEnd(s string, j int) int {
	for j < len(s) && valueByte[s[j]] {
		j++
	}
	return j
}

func skip(s string, j int, set string) int {
	for j < len(s) && strings.IndexByte(set, s[j]) >= 0 {
		j++
	}
	return j
}

func letters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case; prefix is lower
// case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for k := 0; k < len(prefix); k++ {
		c := s[k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[k] {
			return false
		}
	}
	return true
}
