package config

import (
	"fmt"
	"net/url"
	"regexp"
)

// Backend kinds.
const (
	KindOpenAI    = "openai"    // OpenAI-compatible chat completions
	KindAnthropic = "anthropic" // Anthropic Messages
	KindOllama    = "ollama"    // Ollama native /api/chat
)

// Backend is one configured LLM endpoint. The key itself is never part of
// anything served; APIKeyEnv names where it comes from.
type Backend struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	BaseURL   string `json:"base_url,omitempty"`
	Model     string `json:"model,omitempty"`       // default model
	APIKeyEnv string `json:"api_key_env,omitempty"` // environment variable holding the key
	APIKey    string `json:"api_key,omitempty"`     // discouraged; prefer api_key_env
	// ContextWindow overrides the context window the server reports, for
	// servers that report none. For Ollama it is the num_ctx to allocate
	// (default: the model's own window, capped at 32768 to bound memory).
	ContextWindow int `json:"context_window,omitempty"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// ValidName reports whether s is a valid name for a backend, agent, session,
// tool or skill: [A-Za-z0-9._-]+, not "." or "..", at most 128 bytes.
func ValidName(s string) bool { return ValidNameLen(s, 128) }

// ValidNameLen is the rule of ValidName with another length bound (names
// of files on disk may be up to 255 bytes).
func ValidNameLen(s string, max int) bool {
	return len(s) <= max && nameRE.MatchString(s) && s != "." && s != ".."
}

func checkBackends(bs []Backend) error {
	seen := map[string]bool{}
	for i, b := range bs {
		if !ValidName(b.Name) {
			return fmt.Errorf("backends[%d]: bad name %q", i, b.Name)
		}
		if seen[b.Name] {
			return fmt.Errorf("backends[%d]: duplicate name %q", i, b.Name)
		}
		seen[b.Name] = true
		switch b.Kind {
		case KindOpenAI, KindAnthropic, KindOllama:
		default:
			return fmt.Errorf("backend %s: unknown kind %q (want openai, anthropic or ollama)", b.Name, b.Kind)
		}
		if b.ContextWindow < 0 {
			return fmt.Errorf("backend %s: context_window %d is negative", b.Name, b.ContextWindow)
		}
		if b.BaseURL != "" {
			u, err := url.Parse(b.BaseURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("backend %s: base_url %q is not an http(s) URL", b.Name, b.BaseURL)
			}
		}
	}
	return nil
}

// Default models of the hosted APIs, when the environment names only a
// key. Other endpoints (a local server) default to the first model they
// list.
const (
	DefaultAnthropicModel = "claude-sonnet-4-5"
	DefaultOpenAIModel    = "gpt-5-mini"
)

// loadBackendEnv fills keys from the environment and, when the config file
// names no backends, derives them from the variables the official clients
// use. With nothing configured at all, a local Ollama is the backend.
func loadBackendEnv(c *Config, env Env) {
	for i := range c.Backends {
		b := &c.Backends[i]
		if b.APIKeyEnv != "" {
			if v := env.Get(b.APIKeyEnv); v != "" {
				c.Secrets[b.Name] = v
			}
		} else if b.APIKey != "" {
			c.Secrets[b.Name] = b.APIKey
		}
		b.APIKey = ""
	}
	if len(c.Backends) > 0 {
		return
	}
	if key, base := env.Get("ANTHROPIC_API_KEY"), env.Get("ANTHROPIC_BASE_URL"); key != "" || base != "" {
		b := Backend{Name: "anthropic", Kind: KindAnthropic,
			BaseURL: orDefault(base, "https://api.anthropic.com"), APIKeyEnv: "ANTHROPIC_API_KEY"}
		if base == "" {
			b.Model = DefaultAnthropicModel
		}
		c.Backends = append(c.Backends, b)
		if key != "" {
			c.Secrets["anthropic"] = key
		}
	}
	if key, base := env.Get("OPENAI_API_KEY"), env.Get("OPENAI_BASE_URL"); key != "" || base != "" {
		b := Backend{Name: "openai", Kind: KindOpenAI,
			BaseURL: orDefault(base, "https://api.openai.com/v1"), APIKeyEnv: "OPENAI_API_KEY"}
		if base == "" {
			b.Model = DefaultOpenAIModel
		}
		c.Backends = append(c.Backends, b)
		if key != "" {
			c.Secrets["openai"] = key
		}
	}
	host := env.Get("OLLAMA_HOST")
	c.Backends = append(c.Backends, Backend{Name: "ollama", Kind: KindOllama, BaseURL: ollamaURL(host)})
}

// ollamaURL turns OLLAMA_HOST (which may be "host", "host:port" or a URL)
// into a base URL, as the ollama client does.
func ollamaURL(host string) string {
	if host == "" {
		return "http://127.0.0.1:11434"
	}
	if u, err := url.Parse(host); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return host
	}
	if _, _, err := splitHostPortLoose(host); err == nil {
		return "http://" + host
	}
	return "http://" + host + ":11434"
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
