// Package config builds ollie's configuration as a value. main reads the
// environment and the config file once, calls Load, and passes the result
// down; no other package looks at the environment.
//
// Precedence, lowest first: built-in defaults, the XDG environment,
// the config file ($XDG_CONFIG_HOME/ollie/ollie.json), command-line flags
// (applied by the caller on the returned value).
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// Env is the part of the process environment Load may consult.
type Env struct {
	Get func(string) string // os.Getenv in main; a map lookup in tests
	UID int
}

// OSEnv returns the real process environment.
//
// A process started with an empty environment (as MCP hosts start their
// servers) still finds its home: HOME falls back to the user's entry in
// the password database.
func OSEnv() Env {
	get := func(k string) string {
		v := os.Getenv(k)
		if v == "" && k == "HOME" {
			if u, err := user.Current(); err == nil {
				v = u.HomeDir
			}
		}
		return v
	}
	return Env{Get: get, UID: os.Getuid()}
}

// SocketFile is where a running daemon writes the path of its socket, in
// its state directory, for clients whose environment lacks the
// XDG_RUNTIME_DIR the daemon had.
func (c *Config) SocketFile() string { return filepath.Join(c.StateDir, "socket") }

// Config is the whole configuration of one ollie process.
type Config struct {
	ConfigDir  string // a/ p/ sk/ t/ u/ x/ and ollie.json
	DataDir    string // m/ tr/ tmp/ and session stores
	StateDir   string // daemon log and pid file
	RuntimeDir string // the unix socket; mode 0700
	Socket     string // RuntimeDir/ollie.sock unless overridden
	Mount      string // default mount point for `ollie start` and `ollie mount`
	Listen     string // TCP listen address; "" means no TCP
	Web        string // where `ollie start` starts `ollie web` (loopback); "" means not

	// MaxParallel caps the batch-job sessions running at once.
	MaxParallel int

	File     string // the config file that was read, "" if none
	Backends []Backend
	Sandbox  Sandbox
	Secrets  map[string]string // API keys from the environment; never served
}

// fileConfig is the JSON form of ollie.json. Unknown keys are errors.
type fileConfig struct {
	DataDir  string    `json:"data_dir,omitempty"`
	StateDir string    `json:"state_dir,omitempty"`
	Socket   string    `json:"socket,omitempty"`
	Mount    string    `json:"mount,omitempty"`
	Listen   string    `json:"listen,omitempty"`
	Web      string    `json:"web,omitempty"`
	Backends []Backend `json:"backends,omitempty"`
	Sandbox  *Sandbox  `json:"sandbox,omitempty"`
	// MaxParallel caps the sessions of batch jobs running at once (8).
	MaxParallel int `json:"max_parallel,omitempty"`
}

// Load computes the configuration from env and, if present, the config
// file. configFile overrides the default file location when non-empty; a
// named file that does not exist is an error, the default one may be absent.
func Load(env Env, configFile string) (*Config, error) {
	home := env.Get("HOME")
	if home == "" {
		return nil, errors.New("config: HOME is not set")
	}
	xdg := func(name, def string) string {
		if v := env.Get(name); v != "" && filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(home, def)
	}
	c := &Config{
		ConfigDir: filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "ollie"),
		DataDir:   filepath.Join(xdg("XDG_DATA_HOME", ".local/share"), "ollie"),
		StateDir:  filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), "ollie"),
		Mount:     filepath.Join(home, "mnt", "ollie"),
		Sandbox:   DefaultSandbox(),
		Secrets:   map[string]string{},
	}
	if rt := env.Get("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		c.RuntimeDir = filepath.Join(rt, "ollie")
	} else {
		c.RuntimeDir = filepath.Join(os.TempDir(), "ollie-"+strconv.Itoa(env.UID))
	}
	c.Socket = filepath.Join(c.RuntimeDir, "ollie.sock")

	path, must := configFile, true
	if path == "" {
		path, must = filepath.Join(c.ConfigDir, "ollie.json"), false
	}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := c.apply(path, data, home); err != nil {
			return nil, err
		}
		c.File = path
	case errors.Is(err, fs.ErrNotExist) && !must:
	default:
		return nil, fmt.Errorf("config: %v", err)
	}
	loadBackendEnv(c, env)
	return c, nil
}

func (c *Config) apply(path string, data []byte, home string) error {
	var f fileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("%s: %s", where(path, data, err), jsonMessage(err))
	}
	if dec.More() {
		return fmt.Errorf("%s: trailing data after the JSON object", path)
	}
	abs := func(key, v string, dst *string) error {
		if v == "" {
			return nil
		}
		if strings.HasPrefix(v, "~/") {
			v = filepath.Join(home, v[2:])
		}
		if !filepath.IsAbs(v) {
			return fmt.Errorf("%s: %s must be an absolute path, not %q", path, key, v)
		}
		*dst = filepath.Clean(v)
		return nil
	}
	for _, p := range []struct {
		key, v string
		dst    *string
	}{
		{"data_dir", f.DataDir, &c.DataDir},
		{"state_dir", f.StateDir, &c.StateDir},
		{"socket", f.Socket, &c.Socket},
		{"mount", f.Mount, &c.Mount},
	} {
		if err := abs(p.key, p.v, p.dst); err != nil {
			return err
		}
	}
	if f.Socket != "" {
		c.RuntimeDir = filepath.Dir(c.Socket)
	}
	if f.Listen != "" {
		if err := CheckListen9P(f.Listen); err != nil {
			return fmt.Errorf("%s: listen: %v", path, err)
		}
		c.Listen = f.Listen
	}
	if f.Web != "" {
		if err := CheckListen(f.Web); err != nil {
			return fmt.Errorf("%s: web: %v", path, err)
		}
		c.Web = f.Web
	}
	if f.MaxParallel < 0 || f.MaxParallel > 1024 {
		return fmt.Errorf("%s: max_parallel %d is outside 0..1024", path, f.MaxParallel)
	}
	c.MaxParallel = f.MaxParallel
	if err := checkBackends(f.Backends); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	c.Backends = f.Backends
	if f.Sandbox != nil {
		if err := f.Sandbox.check(); err != nil {
			return fmt.Errorf("%s: sandbox: %v", path, err)
		}
		c.Sandbox = *f.Sandbox
	}
	return nil
}

// where names the position of a JSON error as path:line:col when known.
func where(path string, data []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return path
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}

func jsonMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	return msg
}

// PrivatePaths are ollie's own directories and files: hidden from stages,
// and never a session's working directory.
func (c *Config) PrivatePaths() []string {
	p := []string{c.ConfigDir, c.DataDir, c.StateDir, c.RuntimeDir, c.Mount}
	if c.File != "" {
		p = append(p, c.File)
	}
	if c.Socket != "" {
		p = append(p, filepath.Dir(c.Socket))
	}
	return p
}
