package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadWith(t *testing.T, vars map[string]string, file string) (*Config, error) {
	t.Helper()
	home := t.TempDir()
	vars["HOME"] = home
	path := ""
	if file != "" {
		path = filepath.Join(home, "ollie.json")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Load(Env{Get: func(k string) string { return vars[k] }, UID: 1000}, path)
}

func TestBackendsFromEnvironment(t *testing.T) {
	c, err := loadWith(t, map[string]string{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Backends) != 1 || c.Backends[0].Kind != KindOllama || c.Backends[0].BaseURL != "http://127.0.0.1:11434" {
		t.Errorf("no configuration: %+v, want a local Ollama", c.Backends)
	}
	c, err = loadWith(t, map[string]string{
		"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1",
		"ANTHROPIC_API_KEY": "sk-a", "OLLAMA_HOST": "gpu-box:11500",
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Backend{}
	for _, b := range c.Backends {
		got[b.Name] = b
	}
	if got["openai"].BaseURL != "http://127.0.0.1:8000/v1" || got["anthropic"].BaseURL != "https://api.anthropic.com" ||
		got["ollama"].BaseURL != "http://gpu-box:11500" {
		t.Errorf("backends %+v", c.Backends)
	}
	if c.Secrets["openai"] != "sk-o" || c.Secrets["anthropic"] != "sk-a" {
		t.Errorf("secrets %v", c.Secrets)
	}
	for _, b := range c.Backends {
		if b.APIKey != "" {
			t.Errorf("backend %s holds its key", b.Name)
		}
	}
}

func TestBackendsFromFile(t *testing.T) {
	c, err := loadWith(t, map[string]string{"ROUTER_KEY": "sk-r", "OPENAI_API_KEY": "ignored"}, `{"backends": [
		{"name": "router", "kind": "openai", "base_url": "https://openrouter.ai/api/v1", "model": "anthropic/claude-sonnet-4.5", "api_key_env": "ROUTER_KEY"},
		{"name": "box", "kind": "ollama", "base_url": "http://10.0.0.2:11434", "model": "qwen3:8b", "context_window": 65536},
		{"name": "inline", "kind": "anthropic", "api_key": "sk-inline"}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Backends) != 3 || c.Backends[1].ContextWindow != 65536 || c.Backends[0].Model != "anthropic/claude-sonnet-4.5" {
		t.Errorf("backends %+v: want exactly the file's", c.Backends)
	}
	if c.Secrets["router"] != "sk-r" || c.Secrets["inline"] != "sk-inline" || c.Backends[2].APIKey != "" || len(c.Secrets) != 2 {
		t.Errorf("secrets %v, inline key left %q", c.Secrets, c.Backends[2].APIKey)
	}
	for _, bad := range []string{
		`{"backends": [{"name": "x", "kind": "ollama", "context_window": -1}]}`,
		`{"backends": [{"name": "x", "kind": "gemini"}]}`,
		`{"backends": [{"name": "x", "kind": "openai", "base_url": "ftp://h"}]}`,
	} {
		if _, err := loadWith(t, map[string]string{}, bad); err == nil || !strings.Contains(err.Error(), "backend x") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}
