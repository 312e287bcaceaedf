package config

import (
	"strings"
	"testing"
)

// FuzzConfig: whatever ollie.json holds, reading it ends in an error that
// names the file, or in a configuration the daemon can use: its default
// sandbox profile defined, its backends named once each, of a known kind.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"backends":[{"name":"a","kind":"openai","base_url":"http://127.0.0.1:8080/v1","api_key_env":"K","model":"m","context_window":8192}]}`,
		`{"sandbox":{"default":"p","profiles":{"p":{"extends":"workspace","read":["/srv"]},"q":{"extends":"p","net":true}}}}`,
		`{"sandbox":{"profiles":{"a":{"extends":"b"},"b":{"extends":"a"}}}}`,
		`{"listen":"tcp!127.0.0.1!5640","web":"127.0.0.1:0","max_parallel":4,"socket":"~/s.sock","mount":"/mnt/o"}`,
		`{"sandbox":{"timeout":5,"max_timeout":1,"preapproved":[{"tool":"ls"}]}}`,
		`{"backends":[{"name":"a","kind":"x"}],"bogus":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Config{Sandbox: DefaultSandbox(), Secrets: map[string]string{}}
		if err := c.apply("ollie.json", data, "/home/u"); err != nil {
			if !strings.HasPrefix(err.Error(), "ollie.json") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		if _, err := c.Sandbox.Profile(""); err != nil {
			t.Fatalf("accepted %q, whose default profile is: %v", data, err)
		}
		seen := map[string]bool{}
		for _, b := range c.Backends {
			if !ValidName(b.Name) || seen[b.Name] || (b.Kind != KindOpenAI && b.Kind != KindAnthropic && b.Kind != KindOllama) {
				t.Fatalf("accepted %q, with the backend %+v", data, b)
			}
			seen[b.Name] = true
		}
	})
}
