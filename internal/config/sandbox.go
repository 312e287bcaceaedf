package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Sandbox is the sandbox section of ollie.json: named policy profiles for
// execute_code. An agent configuration picks a profile by name; the model
// never does.
type Sandbox struct {
	// Default names the profile used when an agent names none.
	Default string `json:"default,omitempty"`
	// AllowUnsandboxed lets execute_code run without Landlock on a kernel
	// that lacks it. Off by default: such a kernel is refused.
	AllowUnsandboxed bool `json:"allow_unsandboxed,omitempty"`
	// Profiles are the named policies: the built-in ones (workspace,
	// readonly, offline) overlaid with the file's own.
	Profiles map[string]Profile `json:"profiles,omitempty"`
	// Path is $PATH inside the sandbox; interpreters are looked up in it.
	Path string `json:"path,omitempty"`
	// Timeout is the time a call may take when its arguments name none,
	// MaxTimeout the most they may ask for; both in seconds.
	Timeout    int `json:"timeout,omitempty"`
	MaxTimeout int `json:"max_timeout,omitempty"`
	// MaxResult is the number of bytes of output shown to the model; the
	// rest is saved in the session's tmp directory.
	MaxResult int `json:"max_result,omitempty"`
	// MaxStageOutputMB bounds what one stage may write to stdout.
	MaxStageOutputMB int `json:"max_stage_output_mb,omitempty"`
	// ConsentTimeout is how long, in seconds, an elevated stage waits for
	// an answer before it is denied.
	ConsentTimeout int `json:"consent_timeout,omitempty"`
	// TmpQuotaMB bounds a session's tmp directory, stage output spools
	// included (a tmpfs of that size where the daemon can mount one).
	TmpQuotaMB int `json:"tmp_quota_mb,omitempty"`
	// Preapproved are elevated stages that run without asking, compared
	// exactly: {"language":"bash","code":"..."} or {"tool":"x","args":[...]}.
	Preapproved []json.RawMessage `json:"preapproved,omitempty"`
	// DenyConnect are TCP ports no stage may connect to or bind, and
	// DenyBind ports no stage may bind, whatever its profile: ports of
	// this machine's own services that a stage could abuse. The daemon's
	// own ports and those of local backends are added by StagePorts.
	DenyConnect []uint16 `json:"deny_connect,omitempty"`
	DenyBind    []uint16 `json:"deny_bind,omitempty"`
}

// Profile is one sandbox policy. Its zero value allows nothing; built-in
// profiles and "extends" give the usual starting points.
type Profile struct {
	// Extends names a profile whose settings this one starts from.
	Extends string `json:"extends,omitempty"`
	// System grants read and execute on the whole file system except the
	// user's home, other users' homes, /tmp, ollie's own directories and
	// known secrets (/etc/shadow, ssh host keys, ...).
	System bool `json:"system"`
	// Home grants read on $HOME except known secrets (~/.ssh, ~/.aws, ...).
	Home bool `json:"home"`
	// Cwd is the access to the session's working directory: rw, ro or none.
	Cwd string `json:"cwd"`
	// Read and Write are further paths granted read(+execute) or read-write.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Hide are further paths kept out of System and Home.
	Hide []string `json:"hide,omitempty"`
	// Network allows IP sockets. TCPConnect and TCPBind, when set, narrow
	// TCP to those ports (Landlock ABI 4 and later).
	Network    bool     `json:"network"`
	TCPConnect []uint16 `json:"tcp_connect,omitempty"`
	TCPBind    []uint16 `json:"tcp_bind,omitempty"`
	// UnixSockets allows creating unix domain sockets. Off by default: a
	// unix socket reaches past Landlock to ssh-agent, D-Bus or the ollie
	// daemon itself on kernels before Landlock ABI 9.
	UnixSockets bool `json:"unix_sockets,omitempty"`
	// Limits are resource limits applied to every stage.
	Limits Limits `json:"limits"`
	// ProtectMetadata, on unless set to false, makes workspace metadata
	// that runs code later (.git, ollie's own directories) read-only to
	// stages even inside writable paths (see Protects).
	ProtectMetadata *bool `json:"protect_metadata,omitempty"`
}

// Protects reports whether the profile keeps workspace metadata read-only:
// always, unless the profile opts out with "protect_metadata": false.
func (p Profile) Protects() bool { return p.ProtectMetadata == nil || *p.ProtectMetadata }

// Limits are rlimits; zero leaves a limit as inherited.
type Limits struct {
	Procs    int `json:"procs,omitempty"`     // RLIMIT_NPROC: all processes of the user
	MemoryMB int `json:"memory_mb,omitempty"` // RLIMIT_AS
	FileMB   int `json:"file_mb,omitempty"`   // RLIMIT_FSIZE
	Files    int `json:"files,omitempty"`     // RLIMIT_NOFILE
	CPUSecs  int `json:"cpu_secs,omitempty"`  // RLIMIT_CPU
}

// Cwd access modes.
const (
	AccessRW   = "rw"
	AccessRO   = "ro"
	AccessNone = "none"
)

var defaultLimits = Limits{Procs: 4096, MemoryMB: 8192, FileMB: 1024, Files: 4096}

// BuiltinProfiles returns the profiles every configuration has, with
// their network policies:
//   - workspace, the default: read the system, read-write cwd, and TCP and
//     UDP egress to any port but those of StagePorts, since `go get`, `npm
//     install` and `git fetch` are the work;
//   - readonly: cwd read-only, the same network;
//   - offline: no IP socket at all.
//
// No built-in profile has unix sockets.
func BuiltinProfiles() map[string]Profile {
	ws := Profile{System: true, Cwd: AccessRW, Network: true, Limits: defaultLimits}
	ro, off := ws, ws
	ro.Cwd = AccessRO
	off.Network = false
	return map[string]Profile{"workspace": ws, "readonly": ro, "offline": off}
}

// DefaultSandbox is the sandbox configuration when the file says nothing.
func DefaultSandbox() Sandbox {
	return Sandbox{
		Default:          "workspace",
		Profiles:         BuiltinProfiles(),
		Path:             "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		Timeout:          120,
		MaxTimeout:       3600,
		MaxResult:        32 << 10,
		MaxStageOutputMB: 512,
		ConsentTimeout:   300,
		TmpQuotaMB:       1024,
	}
}

// Profile returns the profile called name, or the default one if name is
// empty.
func (s Sandbox) Profile(name string) (Profile, error) {
	if name == "" {
		name = s.Default
	}
	p, ok := s.Profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("unknown sandbox profile %q (have %s)", name, strings.Join(s.names(), ", "))
	}
	return p, nil
}

func (s Sandbox) names() []string {
	var ns []string
	for n := range s.Profiles {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// sandboxFile is the JSON form; profiles stay raw until their base is known.
type sandboxFile struct {
	Default          *string                    `json:"default"`
	AllowUnsandboxed *bool                      `json:"allow_unsandboxed"`
	Profiles         map[string]json.RawMessage `json:"profiles"`
	Path             *string                    `json:"path"`
	Timeout          *int                       `json:"timeout"`
	MaxTimeout       *int                       `json:"max_timeout"`
	MaxResult        *int                       `json:"max_result"`
	MaxStageOutputMB *int                       `json:"max_stage_output_mb"`
	ConsentTimeout   *int                       `json:"consent_timeout"`
	TmpQuotaMB       *int                       `json:"tmp_quota_mb"`
	Preapproved      []json.RawMessage          `json:"preapproved"`
	DenyConnect      []uint16                   `json:"deny_connect"`
	DenyBind         []uint16                   `json:"deny_bind"`
}

// UnmarshalJSON overlays the file's sandbox section on DefaultSandbox. A
// profile is decoded over a copy of the one it extends, so it only needs to
// say what differs.
func (s *Sandbox) UnmarshalJSON(data []byte) error {
	var f sandboxFile
	if err := strictDecode(data, &f); err != nil {
		return err
	}
	*s = DefaultSandbox()
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	if f.Default != nil {
		s.Default = *f.Default
	}
	if f.AllowUnsandboxed != nil {
		s.AllowUnsandboxed = *f.AllowUnsandboxed
	}
	if f.Path != nil {
		s.Path = *f.Path
	}
	set(&s.Timeout, f.Timeout)
	set(&s.MaxTimeout, f.MaxTimeout)
	set(&s.MaxResult, f.MaxResult)
	set(&s.MaxStageOutputMB, f.MaxStageOutputMB)
	set(&s.ConsentTimeout, f.ConsentTimeout)
	set(&s.TmpQuotaMB, f.TmpQuotaMB)
	s.Preapproved = f.Preapproved
	s.DenyConnect, s.DenyBind = f.DenyConnect, f.DenyBind
	done := map[string]bool{}
	for name := range f.Profiles {
		if err := s.resolve(name, f.Profiles, done, 0); err != nil {
			return err
		}
	}
	return nil
}

// resolve decodes profile name over its base, resolving the base first.
func (s *Sandbox) resolve(name string, raw map[string]json.RawMessage, done map[string]bool, depth int) error {
	if done[name] {
		return nil
	}
	if depth > 8 {
		return fmt.Errorf("profile %s: extends loops", name)
	}
	var head struct {
		Extends string `json:"extends"`
	}
	if err := json.Unmarshal(raw[name], &head); err != nil {
		return fmt.Errorf("profile %s: %v", name, jsonMessage(err))
	}
	var p Profile
	if b := head.Extends; b != "" {
		if _, ok := raw[b]; ok && b != name {
			if err := s.resolve(b, raw, done, depth+1); err != nil {
				return err
			}
		}
		base, ok := s.Profiles[b]
		if !ok {
			return fmt.Errorf("profile %s: extends unknown profile %q", name, b)
		}
		p = base
		p.Read, p.Write, p.Hide = clip(p.Read), clip(p.Write), clip(p.Hide)
		if v := p.ProtectMetadata; v != nil {
			// Decoding through the base's pointer would change the base.
			p.ProtectMetadata = new(bool)
			*p.ProtectMetadata = *v
		}
	}
	if err := strictDecode(raw[name], &p); err != nil {
		return fmt.Errorf("profile %s: %v", name, err)
	}
	s.Profiles[name] = p
	done[name] = true
	return nil
}

// clip makes appends to an inherited list leave the base's list alone.
func clip(s []string) []string { return s[:len(s):len(s)] }

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s", jsonMessage(err))
	}
	return nil
}

func (s *Sandbox) check() error {
	if s.Default == "" {
		s.Default = "workspace"
	}
	if !ValidName(s.Default) {
		return fmt.Errorf("bad default profile name %q", s.Default)
	}
	if s.Profiles == nil {
		s.Profiles = BuiltinProfiles()
	}
	if _, ok := s.Profiles[s.Default]; !ok {
		return fmt.Errorf("default profile %q is not defined", s.Default)
	}
	for _, name := range s.names() {
		if err := s.Profiles[name].check(name); err != nil {
			return err
		}
	}
	if s.Timeout <= 0 || s.MaxTimeout < s.Timeout {
		return fmt.Errorf("timeout %d and max_timeout %d: want 0 < timeout <= max_timeout", s.Timeout, s.MaxTimeout)
	}
	if s.MaxResult < 1024 || s.MaxStageOutputMB <= 0 || s.ConsentTimeout <= 0 {
		return fmt.Errorf("max_result (at least 1024), max_stage_output_mb and consent_timeout must be positive")
	}
	if s.TmpQuotaMB <= 0 || s.TmpQuotaMB > 1<<20 {
		return fmt.Errorf("tmp_quota_mb %d: want 1 to %d", s.TmpQuotaMB, 1<<20)
	}
	for i, p := range s.Preapproved {
		if len(p) == 0 || p[0] != '{' {
			return fmt.Errorf("preapproved[%d]: want a stage object", i)
		}
	}
	return nil
}

func (p Profile) check(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("bad profile name %q", name)
	}
	switch p.Cwd {
	case AccessRW, AccessRO, AccessNone:
	default:
		return fmt.Errorf("profile %s: cwd %q: want rw, ro or none", name, p.Cwd)
	}
	for _, list := range [][]string{p.Read, p.Write, p.Hide} {
		for _, path := range list {
			if !filepath.IsAbs(path) && !strings.HasPrefix(path, "~/") {
				return fmt.Errorf("profile %s: path %q must be absolute or start with ~/", name, path)
			}
		}
	}
	l := p.Limits
	if l.Procs < 0 || l.MemoryMB < 0 || l.FileMB < 0 || l.Files < 0 || l.CPUSecs < 0 {
		return fmt.Errorf("profile %s: negative limit", name)
	}
	return nil
}

// StagePorts are the TCP ports stages are kept from, whatever their
// profile: connect lists those no stage may connect to or bind (the
// daemon's 9P listener and Sandbox.DenyConnect), bind those no stage may
// bind either (the ports of backends on this machine, and
// Sandbox.DenyBind). A stage that bound a keyed backend's port while it
// was free, then started a sub-agent on that backend, would be sent the
// key. Ports of other services the daemon runs (an `ollie mcp proxy`)
// belong in DenyConnect.
func (c *Config) StagePorts() (connect, bind []uint16) {
	connect = append(connect, c.Sandbox.DenyConnect...)
	if p := listenPort(c.Listen); p != 0 {
		connect = append(connect, p)
	}
	bind = append(bind, c.Sandbox.DenyBind...)
	for _, b := range c.Backends {
		if p := localPort(b.BaseURL); p != 0 {
			bind = append(bind, p)
		}
	}
	return sortedPorts(connect), sortedPorts(bind)
}

func listenPort(addr string) uint16 {
	if addr == "" {
		return 0
	}
	addr = strings.Replace(strings.TrimPrefix(addr, "tcp!"), "!", ":", 1)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(port, 10, 16)
	return uint16(n)
}

// localPort is the port of a URL on this machine (a loopback address or
// localhost), with the scheme's default; 0 for a remote one.
func localPort(raw string) uint16 {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return 0
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); host != "localhost" && (err != nil || !ip.IsLoopback()) {
		return 0
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	n, _ := strconv.ParseUint(port, 10, 16)
	return uint16(n)
}

func sortedPorts(p []uint16) []uint16 {
	slices.Sort(p)
	return slices.Compact(p)
}
