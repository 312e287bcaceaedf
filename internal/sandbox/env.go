package sandbox

import "strings"

// passEnv are the variables of the daemon's own environment a stage may
// see: locale, terminal and who the user is. Everything else, API keys
// first, stays behind; a session adds its own variables through its env
// file.
var passEnv = map[string]bool{
	"LANG": true, "LANGUAGE": true, "TERM": true, "COLORTERM": true, "NO_COLOR": true,
	"TZ": true, "USER": true, "LOGNAME": true,
}

// BaseEnv returns the allow-listed part of environ (KEY=VALUE lines).
func BaseEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && (passEnv[k] || strings.HasPrefix(k, "LC_")) {
			out = append(out, kv)
		}
	}
	return out
}

// MergeEnv returns base with each KEY=VALUE of over replacing or adding
// to it, in a stable order.
func MergeEnv(base []string, over ...string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range append(base[:len(base):len(base)], over...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}
