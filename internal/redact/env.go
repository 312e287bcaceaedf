package redact

import (
	"slices"
	"strings"
)

// Env returns the environment for a program the daemon runs outside the
// sandbox whose output enters the tree (hooks, x/ plugins): environ
// without secrets. A variable is dropped when
//
//   - its name is the api_key_env of a configured backend (always);
//   - its value holds a configured key (always);
//   - its name looks like a credential: it ends in _KEY or _APIKEY, or
//     contains TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, in any case;
//     unless pass names it (an agent's pass_env).
//
// Malformed entries (no '=') are dropped too.
func (r *Redactor) Env(environ []string, pass []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if r != nil && (r.keyEnv[name] || r.holdsSecret(val)) {
			continue
		}
		if SecretEnvName(name) && !slices.Contains(pass, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (r *Redactor) holdsSecret(v string) bool {
	for _, s := range r.secrets {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// envSuffixes and envWords are the upper-case forms of credential names.
var (
	envSuffixes = []string{"_KEY", "_APIKEY", "_PAT"}
	envWords    = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}
)

// SecretEnvName reports whether an environment variable's name looks like
// it holds a credential (OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY,
// PGPASSWORD, ...).
func SecretEnvName(name string) bool {
	n := strings.ToUpper(name)
	for _, s := range envSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, w := range envWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
