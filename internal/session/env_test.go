package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
)

func newSession(t *testing.T) *session.Session {
	t.Helper()
	dir := t.TempDir()
	m, err := session.Open(session.Options{Dir: filepath.Join(dir, "s"), TrDir: filepath.Join(dir, "tr")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	s, err := m.New(session.Spec{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSetEnv(t *testing.T) {
	s := newSession(t)
	if err := s.SetEnv([]byte("A=1\nsecret PASS=hunter2hunter2\nGH_TOKEN=t0k3n\n# comment\n\n")); err != nil {
		t.Fatal(err)
	}
	got := map[string]session.EnvVar{}
	for _, v := range s.Env() {
		got[v.Key] = v
	}
	if got["A"].Value != "1" || got["A"].Secret || !got["PASS"].Secret || !got["GH_TOKEN"].Secret || len(got) != 3 {
		t.Errorf("env = %+v", got)
	}
	if err := s.SetEnv([]byte("A=\n")); err != nil || len(s.Env()) != 2 {
		t.Errorf("A= did not remove A: %v %+v", err, s.Env())
	}
}

// A value a program's environment cannot hold fails the whole write, with
// the key named and the value never shown.
func TestSetEnvRefuses(t *testing.T) {
	s := newSession(t)
	s.SetEnv([]byte("KEEP=yes\n"))
	for _, c := range []struct {
		in   string
		k    errs.Kind
		want string
	}{
		{"OK=1\nX=a\x00hunter9\n", errs.Invalid, "env: X: NUL byte at offset 1"},
		{"X=caf\xe9hunter9\n", errs.Invalid, "env: X: not UTF-8 text"},
		{"X=" + strings.Repeat("v", 33<<10) + "\n", errs.TooLarge, "env: X: value of 33792 bytes, over 32768"},
		{"hunter9\n", errs.Invalid, "a line without ="},
		{"X\x00Y=hunter9\n", errs.Invalid, `"X\x00Y"=`},
		{"9LIVES=hunter9\n", errs.Invalid, `"9LIVES"=`},
	} {
		err := s.SetEnv([]byte(c.in))
		if !errs.Is(err, c.k) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetEnv(%.30q) = %v, want %v with %q", c.in, err, c.k, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter9") {
			t.Errorf("SetEnv(%.30q) error shows the value: %v", c.in, err)
		}
	}
	var big strings.Builder
	for i := range 9 {
		big.WriteString("V" + string(rune('A'+i)) + "=" + strings.Repeat("v", 30<<10) + "\n")
	}
	if err := s.SetEnv([]byte(big.String())); !errs.Is(err, errs.TooLarge) || !strings.Contains(err.Error(), "in all") {
		t.Errorf("270 KiB of env: %v", err)
	}
	if env := s.Env(); len(env) != 1 || env[0].Key != "KEEP" {
		t.Errorf("refused writes changed env: %+v", env)
	}
}

// An env.json written before values were checked does not break every
// tool call: the variables that cannot be passed are left out.
func TestEnvSkipsBadStored(t *testing.T) {
	s := newSession(t)
	s.SetEnv([]byte("GOOD=1\n"))
	bad := `[{"Key":"GOOD","Value":"1"},{"Key":"BAD","Value":"a\u0000b"},{"Key":"1X","Value":"v"}]`
	if err := os.WriteFile(filepath.Join(filepath.Dir(s.ChatPath()), "env.json"), []byte(bad), 0600); err != nil {
		t.Fatal(err)
	}
	if env := s.Env(); len(env) != 1 || env[0].Key != "GOOD" {
		t.Errorf("env = %+v", env)
	}
}

func TestSetCfgNumbers(t *testing.T) {
	s := newSession(t)
	for _, c := range []struct{ k, v, want string }{
		{"max_steps", "1e3", "max_steps=1e3: want a whole number from 1 to 10000"},
		{"max_steps", "2 junk", "from 1 to 10000"},
		{"max_steps", "10001", "from 1 to 10000"},
		{"max_tokens", "0", "max_tokens=0: want a whole number from 1 to 1048576"},
		{"temperature", "NaN", "temperature=NaN: want a number from 0 to 2"},
		{"temperature", "Inf", "from 0 to 2"},
		{"temperature", "0x1p-1", "from 0 to 2"},
		{"model", "a\xffb", "model: not UTF-8 text"},
		{"cwd", "/tmp\x00", "cwd: NUL byte"},
		{"colour", "red", `unknown key "colour" (writable: `},
	} {
		err := s.SetCfg(map[string]string{c.k: c.v})
		if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cfg %s=%q: %v, want %q", c.k, c.v, err, c.want)
		}
	}
	if err := s.SetCfg(map[string]string{"max_steps": "7", "temperature": "0.25", "max_tokens": ""}); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{}
	for _, kv := range s.Cfg() {
		cfg[kv[0]] = kv[1]
	}
	if cfg["max_steps"] != "7" || cfg["temperature"] != "0.25" || cfg["max_tokens"] != "" {
		t.Errorf("cfg = %v", cfg)
	}
}

func TestSetPlanText(t *testing.T) {
	s := newSession(t)
	if err := s.SetPlan([]byte("1. ✓ done\n2. next \xe2\x9c")); err != nil {
		t.Errorf("a plan cut inside a rune (a write boundary): %v", err)
	}
	for _, bad := range []string{"a\x00b", "caf\xe9 au lait"} {
		if err := s.SetPlan([]byte(bad)); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "plan: ") {
			t.Errorf("SetPlan(%q) = %v", bad, err)
		}
	}
}

// Writers of different keys at once: each write reads what the others
// wrote, so every key lands (a read-modify-write without order loses
// all but one).
func TestSetEnvConcurrent(t *testing.T) {
	s := newSession(t)
	const n = 8
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.SetEnv([]byte(fmt.Sprintf("K%d=v%d\n", i, i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := s.Env(); len(got) != n {
		t.Errorf("env after %d writers: %+v", n, got)
	}
}

// A system prompt rendered from settings that changed while it was
// rendered is dropped: the render made for the change, which may end
// first, stays.
func TestStaleSystemPromptDropped(t *testing.T) {
	s := newSession(t)
	_, old := s.SettingsVersion()
	if err := s.SetCfg(map[string]string{"model": "m2"}); err != nil {
		t.Fatal(err)
	}
	_, vers := s.SettingsVersion()
	if vers == old {
		t.Fatal("the settings' version did not change with them")
	}
	s.SetSystemPrompt("for m2", vers)
	s.SetSystemPrompt("for the old settings", old)
	if got := string(s.SystemPrompt()); got != "for m2" {
		t.Errorf("system prompt %q, want the one rendered for the new settings", got)
	}
}
