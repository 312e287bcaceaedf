package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ollie.dev/ollie/internal/agentcfg"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ns"
	"ollie.dev/ollie/internal/session"
)

// agentChecker accepts the name of a valid agent configuration in a/.
func agentChecker(cfg *config.Config) func(string) error {
	return func(name string) error {
		if !config.ValidName(name) {
			return errs.E(errs.Invalid, fmt.Sprintf("bad agent name %q", name))
		}
		b, err := os.ReadFile(filepath.Join(cfg.ConfigDir, "a", name+".json"))
		if err != nil {
			// Invalid, not NotExist: the file written (cfg, s/new, ctl)
			// exists; the value in it is what is wrong.
			return errs.E(errs.Invalid, "no agent "+name+" (no a/"+name+".json)")
		}
		if _, err := agentcfg.Parse(b); err != nil {
			return errs.E(errs.Invalid, "a/"+name+".json: "+err.Error())
		}
		return nil
	}
}

// backendChecker accepts the name of a configured backend.
func backendChecker(cfg *config.Config) func(string) error {
	return func(name string) error {
		names := make([]string, 0, len(cfg.Backends))
		for _, b := range cfg.Backends {
			if b.Name == name {
				return nil
			}
			names = append(names, b.Name)
		}
		if len(names) == 0 {
			names = append(names, "none")
		}
		return errs.E(errs.Invalid, fmt.Sprintf("no backend %q (configured: %s)", name, strings.Join(names, " ")))
	}
}

func sessionCounters(m *session.Manager) []ns.Counter {
	return []ns.Counter{
		{Name: "sessions", Doc: "Sessions on disk.", Read: func() string { return fmt.Sprintf("%d\n", m.Len()) }},
		{Name: "turns", Doc: "Turns started since the daemon started.", Read: func() string { return fmt.Sprintf("%d\n", m.Turns()) }},
		{Name: "toolcalls", Doc: "Tool calls run since the daemon started.", Read: func() string { return fmt.Sprintf("%d\n", m.ToolCalls()) }},
	}
}
