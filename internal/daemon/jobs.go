package daemon

import (
	"os"
	"path/filepath"

	"ollie.dev/ollie/internal/agentcfg"
	"ollie.dev/ollie/internal/batch"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ns"
	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/session"
)

// jobMaker applies the rules of batch jobs: a job from b/new is the
// user's; one from a session's spawn file belongs to that session, runs
// under its sandbox policy (never a wider one) and within its agent's
// concurrency cap.
type jobMaker struct {
	cfg *config.Config
	reg *batch.Registry
}

const defaultConcurrency = 4

func (jm *jobMaker) new(sp batch.Spec, parent *session.Session) (*batch.Job, error) {
	if parent != nil {
		return nil, errs.E(errs.Invalid, "internal: b/new has no parent")
	}
	if sp.Cwd == "" {
		return nil, errs.E(errs.Invalid, "cwd is required (cwd=/some/dir)")
	}
	return jm.reg.New(sp, 0)
}

func (jm *jobMaker) spawn(parent *session.Session, text string) (string, error) {
	sp, err := batch.ParseSpec(text, ns.ParseJobKV)
	if err != nil {
		return "", err
	}
	m := parent.Meta()
	a := jm.agent(m.Agent)
	sp.Parent = parent.ID()
	if sp.Cwd == "" {
		sp.Cwd = m.Cwd
	}
	// A sub-agent works where its parent may: in the parent's cwd or
	// below it, on the parent's backend. Its policy is the parent's.
	if !filepath.IsAbs(sp.Cwd) || !sandbox.Within(sp.Cwd, m.Cwd) {
		return "", errs.E(errs.Permission, "a sub-agent's cwd must be its parent's ("+m.Cwd+") or inside it, not "+sp.Cwd)
	}
	if sp.Backend != "" && sp.Backend != m.Backend {
		return "", errs.E(errs.Permission, "a sub-agent uses its parent's backend ("+orDefault(m.Backend)+"), not "+sp.Backend)
	}
	sp.Backend = m.Backend
	if sp.Agent == "" {
		sp.Agent = m.Agent
	}
	// The parent's policy, whatever the child's agent would choose.
	sp.Sandbox = m.Sandbox
	if sp.Sandbox == "" && a != nil {
		sp.Sandbox = a.Sandbox
	}
	if sp.Sandbox == "" {
		sp.Sandbox = jm.cfg.Sandbox.Default
	}
	limit := defaultConcurrency
	if a != nil && a.Concurrency > 0 {
		limit = a.Concurrency
	}
	j, err := jm.reg.New(sp, limit)
	if err != nil {
		return "", err
	}
	return j.ID(), nil
}

func orDefault(s string) string {
	if s == "" {
		return "the default"
	}
	return s
}

// cwdChecker is the rule for every session's working directory
// (sandbox.CheckSessionDir) with this daemon's directories, and what
// warms it.
func cwdChecker(cfg *config.Config) (check func(string) error, warm func()) {
	home, _ := os.UserHomeDir() // as the executor hides it (agent.FromConfig)
	private := cfg.PrivatePaths()
	return func(dir string) error { return sandbox.CheckSessionDir(dir, home, private) },
		func() { sandbox.WarmSessionDirCheck(home, private) }
}

func (jm *jobMaker) agent(name string) *agentcfg.Agent {
	b, err := os.ReadFile(filepath.Join(jm.cfg.ConfigDir, "a", name+".json"))
	if err != nil {
		return nil
	}
	a, _ := agentcfg.Parse(b)
	return a
}
