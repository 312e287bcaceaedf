package mcpconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/durable"
	"ollie.dev/ollie/internal/errs"
)

// A Server is one entry of a server list: how to reach an MCP server.
// The JSON form is the "mcpServers" entry MCP hosts share, so a list can
// be pasted from another host's configuration:
//
//	{"mcpServers": {
//	  "fs":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]},
//	  "gh":  {"url": "http://127.0.0.1:7801/mcp"}
//	}}
type Server struct {
	// Type is "stdio" or "http" (streamable HTTP); it follows from
	// Command or URL when empty.
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Description is a line for `mcp servers`; MCP itself ignores it.
	Description string `json:"description,omitempty"`
}

// Servers are named servers.
type Servers map[string]Server

// Names returns the servers' names, sorted.
func (s Servers) Names() []string {
	var n []string
	for k := range s {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

type serversFile struct {
	MCPServers Servers `json:"mcpServers"`
}

// ParseServers decodes a server list. Unknown keys are errors, so a typo
// does not silently drop a setting.
func ParseServers(data []byte) (Servers, error) {
	var f serversFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, errs.E(errs.Invalid, "server list", err)
	}
	if dec.More() {
		return nil, errs.E(errs.Invalid, "server list: trailing data after the JSON object")
	}
	for name, s := range f.MCPServers {
		if !config.ValidName(name) {
			return nil, errs.E(errs.Invalid, "bad server name "+quote(name)+": want [A-Za-z0-9._-]+")
		}
		if err := s.check(); err != nil {
			return nil, errs.E(errs.Invalid, "server "+name, err)
		}
	}
	if f.MCPServers == nil {
		f.MCPServers = Servers{}
	}
	return f.MCPServers, nil
}

func (s Server) check() error {
	switch s.Type {
	case "", "stdio", "http", "streamable-http", "streamableHttp":
	default:
		return errors.New("unsupported type " + quote(s.Type) + ": want stdio or http")
	}
	switch {
	case s.Command == "" && s.URL == "":
		return errors.New("needs a command or a url")
	case s.Command != "" && s.URL != "":
		return errors.New("has both a command and a url")
	case s.URL != "" && s.Type == "stdio", s.Command != "" && s.Type != "" && s.Type != "stdio":
		return errors.New("type " + s.Type + " does not match its command or url")
	case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return errors.New("url " + quote(s.URL) + " is not http or https")
	}
	return nil
}

// LoadServers reads the server lists in files and merges them; a server
// named in several files is the one of the first. A file that does not
// exist, or that this process may not read (the private list, from
// inside the sandbox), adds nothing.
func LoadServers(files ...string) (Servers, error) {
	all := Servers{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s, err := ParseServers(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for name, srv := range s {
			if _, ok := all[name]; !ok {
				all[name] = srv
			}
		}
	}
	return all, nil
}

// A Target says how to reach one server: a command to start and talk to
// over its stdin and stdout, or the URL of a streamable HTTP endpoint.
type Target struct {
	Name    string   // for messages; "" is "server"
	Command []string // stdio: the program and its arguments
	Env     []string // stdio: the program's whole environment
	Dir     string   // stdio: its working directory; "" for ours
	URL     string   // streamable HTTP
	Headers map[string]string
	// Stderr receives a stdio server's stderr; nil discards it.
	Stderr io.Writer
}

// baseEnv are the variables of the bridge's own environment a stdio
// server inherits, as the MCP reference hosts do: enough to find programs
// and a home, nothing that may be a key. The rest comes from its env.
var baseEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Target makes s, called name, something to Dial. getenv is the bridge's
// environment: it gives a stdio server its base variables, and "${VAR}"
// in an env or header value is replaced with getenv("VAR"), so a list
// can name a token without holding it.
func (s Server) Target(name string, getenv func(string) string) Target {
	expand := func(v string) string {
		return varRE.ReplaceAllStringFunc(v, func(m string) string { return getenv(m[2 : len(m)-1]) })
	}
	t := Target{Name: name, URL: s.URL, Dir: s.Cwd}
	if s.Command != "" {
		t.Command = append([]string{s.Command}, s.Args...)
		for _, k := range baseEnv {
			if v := getenv(k); v != "" {
				t.Env = append(t.Env, k+"="+v)
			}
		}
		for _, k := range sortedKeys(s.Env) {
			t.Env = append(t.Env, k+"="+expand(s.Env[k]))
		}
	}
	if len(s.Headers) > 0 {
		t.Headers = map[string]string{}
		for k, v := range s.Headers {
			t.Headers[k] = expand(v)
		}
	}
	return t
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Redacted returns the list with the values of env and headers replaced,
// for showing: they may be keys.
func (s Servers) Redacted() Servers {
	out := Servers{}
	for name, srv := range s {
		srv.Env = redact(srv.Env)
		srv.Headers = redact(srv.Headers)
		out[name] = srv
	}
	return out
}

func redact(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	r := map[string]string{}
	for k := range m {
		r[k] = "..."
	}
	return r
}

// ServersText lists servers one a line: "name: description (how)".
func ServersText(s Servers) string {
	var b strings.Builder
	for _, name := range s.Names() {
		srv := s[name]
		how := "http " + srv.URL
		if srv.Command != "" {
			how = "stdio " + strings.Join(append([]string{srv.Command}, srv.Args...), " ")
		}
		desc := srv.Description
		if desc == "" {
			desc = "(no description)"
		}
		fmt.Fprintf(&b, "%s: %s (%s)\n", name, desc, shorten(how, 100))
	}
	return b.String()
}

// WriteIdx replaces file with data, making its directory: a reader never
// sees half of it.
func WriteIdx(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return durable.Replace(file, data, 0o644, false)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
