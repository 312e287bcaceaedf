package session

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/valid"
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

// envFile is a session's tool environment, env.json: replaced whole by
// each write, atomically and durably. mu orders the writes, so two
// writers of different keys both land (each reads what the other wrote);
// readers take no lock, since a replace is atomic. A leaf lock.
type envFile struct {
	path string
	mu   sync.Mutex
}

// get returns the variables, sorted by key. A variable that could not
// be passed to a program (written before env was checked) is left out
// rather than failing every tool call.
func (e *envFile) get() []EnvVar {
	var vars []EnvVar
	readJSON(e.path, &vars)
	ok := vars[:0]
	for _, v := range vars {
		if validEnvKey(v.Key) && checkEnvValue(v.Key, v.Value) == nil {
			ok = append(ok, v)
		}
	}
	return ok
}

// set applies data (see SetEnv) to the variables.
func (e *envFile) set(data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	vars, err := applyEnv(e.get(), data)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(vars)
	return writeAtomic(e.path, b, 0600)
}

// Env returns the session's tool environment, sorted by key.
func (s *Session) Env() []EnvVar { return s.env.get() }

// Limits of env. Linux refuses to exec a program with one environment
// string over 128 KiB (MAX_ARG_STRLEN), so a bigger value would fail every
// tool call; the total keeps room for the arguments.
const (
	maxEnvValue = 32 << 10
	maxEnvTotal = 256 << 10
)

// SetEnv applies KEY=VALUE lines: each sets a variable, "KEY=" removes
// one, and a line "secret KEY=VALUE" marks a variable secret whatever its
// name. The whole write applies, or none of it. Errors name the key and
// never show a value: it may be a secret.
func (s *Session) SetEnv(data []byte) error { return s.env.set(data) }

// CheckEnv returns the error SetEnv(data) would, and changes nothing: the
// tree calls it with the complete lines of a write still in progress, so
// that a bad line fails its write(2), not only the close.
func (s *Session) CheckEnv(data []byte) error {
	_, err := applyEnv(s.env.get(), data)
	return err
}

// applyEnv returns the environment that data makes of vars.
func applyEnv(vars []EnvVar, data []byte) ([]EnvVar, error) {
	cur := map[string]EnvVar{}
	for _, v := range vars {
		cur[v.Key] = v
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		secret := false
		if rest, ok := strings.CutPrefix(line, "secret "); ok {
			secret, line = true, strings.TrimSpace(rest)
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !validEnvKey(k) {
			return nil, errs.E(errs.Invalid, "env: want KEY=VALUE lines (KEY of letters, digits and _, not starting with a digit), got "+envKeyShort(k, ok))
		}
		if v == "" {
			delete(cur, k)
			continue
		}
		if err := checkEnvValue(k, v); err != nil {
			return nil, err
		}
		cur[k] = EnvVar{Key: k, Value: v, Secret: secret || IsSecretKey(k) || cur[k].Secret}
	}
	vars = make([]EnvVar, 0, len(cur))
	total := 0
	for _, v := range cur {
		vars = append(vars, v)
		total += len(v.Key) + len(v.Value) + 2
	}
	if total > maxEnvTotal {
		return nil, errs.E(errs.TooLarge, fmt.Sprintf("env: %d bytes in all, over %d", total, maxEnvTotal))
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].Key < vars[j].Key })
	return vars, nil
}

// checkEnvValue checks what a program's environment can hold: text,
// without NUL (which would end the string early), of bounded size.
func checkEnvValue(k, v string) error {
	if err := valid.String("env: "+k, v); err != nil {
		return err
	}
	if len(v) > maxEnvValue {
		return errs.E(errs.TooLarge, fmt.Sprintf("env: %s: value of %d bytes, over %d", k, len(v), maxEnvValue))
	}
	return nil
}

// envKeyShort shows what stood for a key in a bad line: the part before
// "=" only, since the rest may be a secret value.
func envKeyShort(k string, hadEq bool) string {
	if !hadEq {
		return "a line without ="
	}
	if len(k) > 40 {
		k = k[:40]
	}
	return strconv.Quote(k) + "="
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

func decodeJSON(s string, v any) { json.Unmarshal([]byte(s), v) }
