package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadSandbox(t *testing.T, js string) (Sandbox, error) {
	t.Helper()
	home := t.TempDir()
	path := filepath.Join(home, "ollie.json")
	if err := os.WriteFile(path, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home}
	c, err := Load(Env{Get: func(k string) string { return env[k] }}, path)
	if err != nil {
		return Sandbox{}, err
	}
	return c.Sandbox, nil
}

func TestSandboxDefaults(t *testing.T) {
	s, err := loadSandbox(t, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "workspace", "readonly", "offline"} {
		if _, err := s.Profile(name); err != nil {
			t.Errorf("profile %q: %v", name, err)
		}
	}
	ws, _ := s.Profile("")
	if !ws.System || ws.Home || ws.Cwd != AccessRW || !ws.Network || ws.UnixSockets || ws.Limits.Procs == 0 {
		t.Errorf("workspace: %+v", ws)
	}
	if ro, _ := s.Profile("readonly"); ro.Cwd != AccessRO {
		t.Errorf("readonly: %+v", ro)
	}
	if off, _ := s.Profile("offline"); off.Network {
		t.Errorf("offline: %+v", off)
	}
}

func TestSandboxUserProfiles(t *testing.T) {
	s, err := loadSandbox(t, `{"sandbox": {
		"default": "mine",
		"timeout": 30,
		"profiles": {
			"mine": {"extends": "strict", "write": ["~/cache"], "limits": {"procs": 64}},
			"strict": {"extends": "offline", "cwd": "ro", "hide": ["/opt/private"]},
			"bare": {"cwd": "none"}
		}}}`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Profile("")
	if err != nil {
		t.Fatal(err)
	}
	if !p.System || p.Network || p.Cwd != AccessRO || p.Limits.Procs != 64 || p.Limits.MemoryMB == 0 ||
		len(p.Hide) != 1 || len(p.Write) != 1 {
		t.Errorf("mine: %+v", p)
	}
	if b, _ := s.Profile("bare"); b.System || b.Network {
		t.Errorf("a profile without extends starts from nothing: %+v", b)
	}
	if s.Timeout != 30 || s.MaxTimeout != DefaultSandbox().MaxTimeout {
		t.Errorf("timeouts %d %d", s.Timeout, s.MaxTimeout)
	}
	if ws, _ := s.Profile("workspace"); ws.Cwd != AccessRW {
		t.Error("built-in profile changed by extending it")
	}
}

func TestSandboxProtectMetadata(t *testing.T) {
	s, err := loadSandbox(t, `{"sandbox": {"tmp_quota_mb": 64, "profiles": {
		"open": {"extends": "workspace", "protect_metadata": false},
		"closed": {"extends": "open", "protect_metadata": true}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"workspace": true, "open": false, "closed": true} {
		if p, _ := s.Profile(name); p.Protects() != want {
			t.Errorf("%s: protects %v, want %v", name, p.Protects(), want)
		}
	}
	if s.TmpQuotaMB != 64 || DefaultSandbox().TmpQuotaMB != 1024 {
		t.Errorf("tmp_quota_mb %d, default %d", s.TmpQuotaMB, DefaultSandbox().TmpQuotaMB)
	}
}

func TestSandboxErrors(t *testing.T) {
	for _, tc := range []struct{ js, want string }{
		{`{"sandbox": {"bogus": 1}}`, `unknown field "bogus"`},
		{`{"sandbox": {"profiles": {"x": {"network": true, "wifi": 1}}}}`, `profile x: unknown field "wifi"`},
		{`{"sandbox": {"profiles": {"x": {"extends": "nope"}}}}`, `extends unknown profile "nope"`},
		{`{"sandbox": {"profiles": {"x": {"extends": "y"}, "y": {"extends": "x"}}}}`, "extends loops"},
		{`{"sandbox": {"profiles": {"x": {"cwd": "rwx"}}}}`, `cwd "rwx"`},
		{`{"sandbox": {"profiles": {"x": {"cwd": "rw", "read": ["relative"]}}}}`, "must be absolute"},
		{`{"sandbox": {"default": "nosuch"}}`, `default profile "nosuch" is not defined`},
		{`{"sandbox": {"timeout": 100, "max_timeout": 10}}`, "want 0 < timeout <= max_timeout"},
		{`{"sandbox": {"profiles": {"x": {"protect_metadata": "no"}}}}`, "protect_metadata"},
		{`{"sandbox": {"tmp_quota_mb": 0}}`, "tmp_quota_mb 0"},
		{`{"sandbox": {"tmp_quota_mb": -5}}`, "tmp_quota_mb -5"},
	} {
		_, err := loadSandbox(t, tc.js)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.js, err, tc.want)
		}
	}
}
