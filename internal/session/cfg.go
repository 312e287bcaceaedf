package session

import (
	"path/filepath"
	"strconv"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/valid"
)

// CfgKeys are the keys of cfg, in the order they are shown. id, name and
// state are read-only there (rename with mv or `ctl rn`).
var CfgKeys = []string{"id", "name", "state", "agent", "backend", "model", "cwd", "temperature", "max_tokens", "max_steps", "sandbox"}

// Cfg returns the session's settings as key, value pairs in CfgKeys order.
// It takes them from the summary, without the lock, so a stat can render
// cfg for its length.
func (s *Session) Cfg() [][2]string {
	sum := s.Summary()
	m := sum.Meta
	temp := ""
	if m.Params.Temperature != nil {
		temp = strconv.FormatFloat(*m.Params.Temperature, 'g', -1, 64)
	}
	itoa := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	return [][2]string{
		{"id", s.id}, {"name", m.Name}, {"state", string(sum.State)}, {"agent", m.Agent},
		{"backend", m.Backend}, {"model", m.Model}, {"cwd", m.Cwd}, {"temperature", temp},
		{"max_tokens", itoa(m.Params.MaxTokens)}, {"max_steps", itoa(m.Params.MaxSteps)}, {"sandbox", m.Sandbox},
	}
}

// SetCfg changes settings. All of kv applies or none does. Changing the
// agent, backend or cwd while a turn runs is refused; the model and
// sampling parameters apply from the next request.
func (s *Session) SetCfg(kv map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	meta, err := s.withCfgLocked(kv)
	if err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(s.dir, "meta.json"), meta); err != nil {
		return err
	}
	s.meta = meta
	s.metaVers++
	s.publishLocked()
	s.eventLocked("cfg", map[string]any{"changed": keys(kv)})
	return nil
}

// CheckCfg returns the error SetCfg(kv) would, and changes nothing: the
// tree calls it with the complete lines of a write still in progress, so
// that a bad value fails its write(2), not only the close.
func (s *Session) CheckCfg(kv map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.withCfgLocked(kv)
	return err
}

// withCfgLocked returns the meta with kv applied, or the first error of
// a key; the session's own is not touched.
func (s *Session) withCfgLocked(kv map[string]string) (Meta, error) {
	meta := s.meta
	for k, v := range kv {
		if err := s.m.setField(&meta, k, v, s.turn != nil); err != nil {
			return meta, err
		}
	}
	return meta, nil
}

func keys(kv map[string]string) []string {
	out := make([]string, 0, len(kv))
	for k := range kv {
		out = append(out, k)
	}
	return out
}

// maxParam bounds the whole-number settings of cfg, as agentcfg bounds
// the same keys in a/*.json.
var maxParam = map[string]int{"max_tokens": 1 << 20, "max_steps": 10000}

func (m *Manager) setField(meta *Meta, k, v string, busy bool) error {
	switch k {
	case "id", "name", "state", "sandbox":
		return errs.E(errs.Permission, k+" is read-only here")
	case "agent", "backend", "cwd":
		if busy {
			return errs.E(errs.Busy, "cannot change "+k+" while a turn runs")
		}
	}
	switch k {
	case "agent":
		if m.o.CheckAgent != nil {
			if err := m.o.CheckAgent(v); err != nil {
				return err
			}
		}
		meta.Agent = v
	case "backend":
		if v != "" && m.o.CheckBackend != nil {
			if err := m.o.CheckBackend(v); err != nil {
				return err
			}
		}
		meta.Backend = v
	case "model":
		if err := checkModel(v); err != nil {
			return err
		}
		meta.Model = v
	case "cwd":
		if err := m.checkCwd(v); err != nil {
			return err
		}
		meta.Cwd = v
	case "temperature":
		if v == "" {
			meta.Params.Temperature = nil
			return nil
		}
		f, err := valid.Float(k, v, 0, 2)
		if err != nil {
			return err
		}
		meta.Params.Temperature = &f
	case "max_tokens", "max_steps":
		n := 0
		if v != "" {
			var err error
			if n, err = valid.Int(k, v, 1, maxParam[k]); err != nil {
				return err
			}
		}
		if k == "max_tokens" {
			meta.Params.MaxTokens = n
		} else {
			meta.Params.MaxSteps = n
		}
	default:
		return errs.E(errs.Invalid, "unknown key "+strconv.Quote(k)+" (writable: agent backend model cwd temperature max_tokens max_steps)")
	}
	return nil
}
