package ns

import (
	"context"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
)

// parseKV reads key=value settings: one per line, or several on a line
// separated by blanks. A value runs to the end of the line or to the next
// " key=" whose key is known, so values may contain spaces:
//
//	cwd=/home/me/my project name=x
func parseKV(text string, known []string) (map[string]string, error) {
	kv := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for line != "" {
			k, rest, ok := strings.Cut(line, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" || strings.ContainsAny(k, " \t") {
				return nil, errs.E(errs.Invalid, "want key=value, got "+quoteShort(line))
			}
			if !contains(known, k) {
				return nil, errs.E(errs.Invalid, "unknown key "+quoteShort(k)+" (known: "+strings.Join(known, " ")+")")
			}
			end := nextKey(rest)
			kv[k] = strings.TrimSpace(rest[:end])
			line = strings.TrimSpace(rest[end:])
		}
	}
	return kv, nil
}

// nextKey returns where the next " key=" starts in s (at the blanks
// before it), else where the blanks that end s start, else len(s). A key
// is a lower-case word; unknown ones are then reported, not swallowed.
// (A regular expression did this, and was a tenth of the CPU of an s/new.)
func nextKey(s string) int {
	for i := 0; i < len(s); {
		if !blank(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && blank(s[j]) {
			j++
		}
		if j == len(s) || keyAt(s[j:]) {
			return i
		}
		i = j
	}
	return len(s)
}

func blank(c byte) bool { return c == ' ' || c == '\t' }

// keyAt says whether s starts with a key and its '='.
func keyAt(s string) bool {
	if s == "" || !(s[0] == '_' || 'a' <= s[0] && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			return true
		case c == '_' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return "\"" + s + "\""
}

// renderKV writes pairs as key=value lines.
func renderKV(pairs [][2]string) []byte {
	var b strings.Builder
	for _, p := range pairs {
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(p[1])
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// rwText is an open of a settings file (cfg, env, ask/N): what is
// written is one message (msgwrite.go), applied all or nothing by write at
// its commit; reads see the settings as they were at the first read (at
// offset 0). spec, if nil, is textMsg.
type rwText struct {
	render func() []byte
	write  func([]byte) error
	spec   *msgSpec

	mu   sync.Mutex // taken before msg's
	msg  *msgHandle
	snap []byte
}

func newSettings(spec *msgSpec, render func() []byte, apply func([]byte) error) *rwText {
	return &rwText{render: render, write: apply, spec: spec}
}

var (
	cfgMsg = &msgSpec{what: "cfg", max: 64 << 10,
		lines: func(done string) error { _, err := parseKV(done, session.CfgKeys); return err }}
	envMsg  = &msgSpec{what: "env", max: 64 << 10}
	textMsg = &msgSpec{what: "text", max: 64 << 10}
)

func (h *rwText) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off == 0 || h.snap == nil {
		h.snap = h.render()
	}
	if off >= int64(len(h.snap)) {
		return 0, nil
	}
	return copy(p, h.snap[off:]), nil
}

func (h *rwText) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.msg == nil {
		spec := h.spec
		if spec == nil {
			spec = textMsg
		}
		h.msg = newMsg(spec, func(m string) error { return h.write([]byte(m)) })
	}
	return h.msg.WriteAt(ctx, p, off)
}

// Truncate (O_TRUNC) changes nothing: settings are changed by writing
// some, never emptied.
func (h *rwText) Truncate(int64) error { return nil }

// Sync applies what was written since the last commit.
func (h *rwText) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.msg == nil {
		return nil
	}
	h.snap = nil
	return h.msg.Sync()
}

func (h *rwText) Close() error { return h.Sync() }
