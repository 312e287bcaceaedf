package agent

import (
	"fmt"
	"os"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/redact"
)

// FromConfig builds the Runner a daemon uses: a backend for every
// configured endpoint (keys from cfg.Secrets) and an executor whose
// sandbox helper is exe (the ollie binary). mount is where the tree is
// mounted, "" if it is not. rd hides the configured keys in what the
// backends answer and in the environment of hooks and plugins.
func FromConfig(cfg *config.Config, exe, mount string, logf func(string, ...any), rd *redact.Redactor) (*Runner, error) {
	var bes []backend.Backend
	for _, bc := range cfg.Backends {
		be, err := backend.New(bc, cfg.Secrets[bc.Name], nil)
		if err != nil {
			return nil, fmt.Errorf("backend %s: %v", bc.Name, err)
		}
		bes = append(bes, backend.Redacting(be, rd))
	}
	home, _ := os.UserHomeDir()
	ex, err := execute.New(execute.Options{
		Exe: exe, Sandbox: cfg.Sandbox, Home: home,
		Private: execute.PrivatePaths(cfg), Environ: os.Environ(), Ports: execute.StagePorts(cfg),
	})
	if err != nil {
		return nil, err
	}
	return New(Options{Config: cfg, Backends: bes, Exec: ex, Mount: mount, Logf: logf, Redact: rd}), nil
}
