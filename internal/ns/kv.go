package ns

import (
	"regexp"
	"strings"

	"ollie.dev/ollie/internal/errs"
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
			end := nextKey(rest, known)
			kv[k] = strings.TrimSpace(rest[:end])
			line = strings.TrimSpace(rest[end:])
		}
	}
	return kv, nil
}

// nextKey returns where the next " key=" starts in s, or len(s). A key
// is a lower-case word; unknown ones are then reported, not swallowed.
func nextKey(s string, known []string) int {
	return keyRE.FindStringIndex(s + " ")[0]
}

var keyRE = regexp.MustCompile(`[ \t]+[a-z_][a-z0-9_]*=|[ \t]*$`)

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
