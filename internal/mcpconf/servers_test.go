package mcpconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/mcpconf"
)

func TestParseServers(t *testing.T) {
	s, err := mcpconf.ParseServers([]byte(`{"mcpServers": {
		"fs": {"command": "npx", "args": ["-y", "server-filesystem", "/srv"], "env": {"TOKEN": "${GH_TOKEN}", "MODE": "ro-${MODE}"}},
		"web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), " "); got != "fs web" {
		t.Errorf("names %q", got)
	}
	env := map[string]string{"GH_TOKEN": "tok", "MODE": "x", "PATH": "/bin", "OPENAI_API_KEY": "sk-no"}
	tg := s["fs"].Target("fs", func(k string) string { return env[k] })
	if got := strings.Join(tg.Command, " "); got != "npx -y server-filesystem /srv" {
		t.Errorf("command %q", got)
	}
	// The base is a short allow-list: the bridge's own keys stay behind.
	if got := strings.Join(tg.Env, " "); got != "PATH=/bin MODE=ro-x TOKEN=tok" {
		t.Errorf("env %q", got)
	}
	if tg := s["web"].Target("web", func(k string) string { return env[k] }); tg.Headers["Authorization"] != "Bearer tok" || tg.URL == "" || tg.Command != nil {
		t.Errorf("http target %+v", tg)
	}
	if r := s.Redacted(); r["fs"].Env["TOKEN"] != "..." || r["web"].Headers["Authorization"] != "..." || s["fs"].Env["TOKEN"] != "${GH_TOKEN}" {
		t.Errorf("redacted %+v, original %+v", r, s)
	}

	for _, bad := range []struct{ json, want string }{
		{`{"mcpServers": {"a b": {"command": "x"}}}`, `bad server name "a b"`},
		{`{"mcpServers": {"a": {}}}`, "server a: needs a command or a url"},
		{`{"mcpServers": {"a": {"command": "x", "url": "http://h/"}}}`, "has both a command and a url"},
		{`{"mcpServers": {"a": {"url": "ftp://h/"}}}`, "is not http or https"},
		{`{"mcpServers": {"a": {"type": "sse", "url": "http://h/"}}}`, `unsupported type "sse"`},
		{`{"mcpServers": {"a": {"commnd": "x"}}}`, `unknown field "commnd"`},
		{`{"mcpServers": {}} {}`, "trailing data"},
	} {
		if _, err := mcpconf.ParseServers([]byte(bad.json)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.json, err, bad.want)
		}
	}
}

func TestLoadServersFirstFileWins(t *testing.T) {
	dir := t.TempDir()
	private, public := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "servers.json")
	os.WriteFile(private, []byte(`{"mcpServers": {"gh": {"command": "gh-server", "env": {"T": "secret"}}}}`), 0o600)
	os.WriteFile(public, []byte(`{"mcpServers": {"gh": {"url": "http://127.0.0.1:7801/"}, "fs": {"command": "fs"}}}`), 0o644)
	s, err := mcpconf.LoadServers(private, public, filepath.Join(dir, "absent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s["gh"].Command != "gh-server" || s["fs"].Command != "fs" {
		t.Errorf("merged %+v", s)
	}
	os.WriteFile(public, []byte(`{"mcpServers": `), 0o644)
	if _, err := mcpconf.LoadServers(public); err == nil || !strings.HasPrefix(err.Error(), public+": bad request: server list") {
		t.Errorf("a broken list: %v", err)
	}
}

// FuzzParseServers: a server list is refused with a reason or gives
// servers with valid names, each reached by a command or by an http(s)
// URL, never both.
func FuzzParseServers(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${V}"}}, "gh": {"type": "http", "url": "https://h/mcp", "headers": {"A": "b"}}}}`))
	f.Add([]byte(`{"mcpServers": {"../x": {"command": "sh"}}}`))
	f.Add([]byte(`{"mcpServers": {"a": {"type": "stdio", "url": "http://h"}}} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := mcpconf.ParseServers(data)
		if err != nil {
			return
		}
		for name, srv := range s {
			if !config.ValidName(name) || (srv.Command == "") == (srv.URL == "") ||
				srv.URL != "" && !strings.HasPrefix(srv.URL, "http://") && !strings.HasPrefix(srv.URL, "https://") {
				t.Fatalf("accepted %q: %q %+v", data, name, srv)
			}
		}
	})
}
