package session

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"ollie.dev/ollie/internal/errs"
)

// EnvVar is one variable of the session's tool environment.
type EnvVar struct {
	Key, Value string
	Secret     bool // never shown through the tree
}

var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// IsSecretKey reports whether a variable's name marks it secret.
func IsSecretKey(k string) bool {
	u := strings.ToUpper(k)
	for _, w := range secretWords {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// Env returns the session's tool environment, sorted by key.
func (s *Session) Env() []EnvVar {
	var vars []EnvVar
	readJSON(filepath.Join(s.dir, "env.json"), &vars)
	return vars
}

// SetEnv applies KEY=VALUE lines: each sets a variable, "KEY=" removes
// one, and a line "secret KEY=VALUE" marks a variable secret whatever its
// name. The whole write applies, or none of it.
func (s *Session) SetEnv(data []byte) error {
	cur := map[string]EnvVar{}
	for _, v := range s.Env() {
		cur[v.Key] = v
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		secret := false
		if rest, ok := strings.CutPrefix(line, "secret "); ok {
			secret, line = true, strings.TrimSpace(rest)
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !validEnvKey(k) {
			return errs.E(errs.Invalid, "env: want KEY=VALUE lines, got "+quoteShort(line))
		}
		if v == "" {
			delete(cur, k)
			continue
		}
		cur[k] = EnvVar{Key: k, Value: v, Secret: secret || IsSecretKey(k) || cur[k].Secret}
	}
	vars := make([]EnvVar, 0, len(cur))
	for _, v := range cur {
		vars = append(vars, v)
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].Key < vars[j].Key })
	b, _ := json.Marshal(vars)
	return writeAtomic(filepath.Join(s.dir, "env.json"), b, 0600)
}

func validEnvKey(k string) bool {
	if k == "" || len(k) > 128 || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return "\"" + s + "\""
}

func readQueue(name string) ([]string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var q []string
	for _, line := range strings.Split(string(b), "\n") {
		var p string
		if line != "" && json.Unmarshal([]byte(line), &p) == nil {
			q = append(q, p)
		}
	}
	return q, nil
}

func decodeJSON(s string, v any) { json.Unmarshal([]byte(s), v) }
