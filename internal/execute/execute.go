// Package execute runs execute_code, the one tool the model has: a
// pipeline of stages, each inline code in some language or a named tool
// from t/, chained stdout to stdin, with fan-out stages in between, every
// process inside the sandbox (package sandbox).
//
// The agent loop builds one Executor from the configuration and calls Run
// once per tool call:
//
//	ex, err := execute.New(execute.Options{
//		Exe:     exe, // os.Executable(); the sandbox helper is ollie-sandbox beside it
//		Sandbox: cfg.Sandbox,
//		Home:    home,
//		Private: execute.PrivatePaths(cfg),
//		Environ: os.Environ(), // filtered: only locale and terminal variables pass
//	})
//	res, err := ex.Run(ctx, execute.Spec{Cwd: cwd, Tmp: tmp, Tools: tdir,
//		Env: sessionEnv, Policy: agent.Sandbox, Consent: asker}, call.Arguments)
//	reply := res.String() // what the model reads; err.Error() when err != nil
//
// The schema shown to the model is Schema, with Description; Args is its
// Go form.
package execute

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/mcpconf"
	"ollie.dev/ollie/internal/sandbox"
)

// Options configure an Executor from the daemon's configuration.
type Options struct {
	// Exe is the ollie executable: stages may run it (OLLIE_BIN), and
	// the MCP bridge beside it (mcpconf.Program), which StartMCP runs.
	// The sandbox helper is sandbox.HelperFor(Exe).
	Exe string
	// Sandbox holds the profiles, timeouts and limits.
	Sandbox config.Sandbox
	// Ports are kept from every stage whatever its profile: the daemon
	// sets them from config.Config.StagePorts (its own TCP listeners,
	// local backends' ports).
	Ports sandbox.Guard
	// Home is the user's home directory, hidden from stages by default.
	Home string
	// Private are ollie's own directories and files (see PrivatePaths).
	Private []string
	// Environ is the daemon's environment. Only allow-listed variables
	// (locale, terminal, user name) reach a stage; keys never do.
	Environ []string
	// OneShot starts every stage through a helper process of its own
	// instead of the resident helper: about 3 ms more per stage, and no
	// helper process left running between calls.
	OneShot bool
}

// Spec is the session side of one call. Cwd and Tmp are required.
type Spec struct {
	Cwd   string   // working directory of every stage
	Tmp   string   // scratch directory, read-write; full outputs are saved here
	Tools string   // directory of named tools (t/); "" for none
	Env   []string // the session's KEY=VALUE variables, over the base environment
	// Policy names the sandbox profile; "" means the configured default.
	// It comes from the agent configuration, never from the model.
	Policy string
	// Consent decides on elevated stages; nil denies them all.
	Consent Consent
	// Session names the session in consent requests.
	Session string
	// Read and Write are further paths this session's stages may read or
	// write, beyond the profile's: the parts of the tree its tools use.
	// They come from the daemon, never from the model.
	Read, Write []string
}

// Executor runs calls. It is safe for concurrent use.
type Executor struct {
	o           Options
	helper      string
	mcp         string   // the MCP bridge, beside Exe
	programs    []string // the directories of Exe and of the helper
	base        []string
	preapproved []Stage
}

// New checks o and returns an Executor.
func New(o Options) (*Executor, error) {
	if o.Exe == "" {
		return nil, errs.E(errs.Invalid, "execute: no ollie executable")
	}
	if o.Sandbox.Profiles == nil {
		o.Sandbox = config.DefaultSandbox()
	}
	e := &Executor{o: o, helper: sandbox.HelperFor(o.Exe), base: sandbox.BaseEnv(o.Environ),
		mcp: filepath.Join(filepath.Dir(o.Exe), mcpconf.Program)}
	e.programs = slices.Compact([]string{filepath.Dir(o.Exe), filepath.Dir(e.helper)})
	for i, raw := range o.Sandbox.Preapproved {
		st, err := parseStage(raw)
		if err != nil {
			return nil, errs.E(errs.Invalid, "execute: preapproved["+itoa(i)+"]", err)
		}
		e.preapproved = append(e.preapproved, st)
	}
	return e, nil
}

// PrivatePaths lists ollie's own places in c: configuration (keys), data
// (other sessions), state, the runtime directory (the daemon's socket)
// and the mount point.
func PrivatePaths(c *config.Config) []string { return c.PrivatePaths() }

// StagePorts are the TCP ports c keeps from every stage, for
// Options.Ports (config.Config.StagePorts).
func StagePorts(c *config.Config) sandbox.Guard {
	connect, bind := c.StagePorts()
	return sandbox.Guard{Connect: connect, Bind: bind}
}

// Run parses args (the model's JSON) and runs the pipeline.
//
// An error means nothing ran: the arguments were bad, a language or tool
// does not exist, or the sandbox could not be set up; its text is meant
// for the model. Otherwise the Result says what happened, including a
// failing stage or a timeout, with the output produced so far. If ctx is
// cancelled, Run kills the running stage and returns its partial Result
// with an error of kind Interrupted.
func (e *Executor) Run(ctx context.Context, spec Spec, args []byte) (*Result, error) {
	start := time.Now()
	a, err := ParseArgs(args, e.o.Sandbox)
	if err != nil {
		return nil, err
	}
	if spec.Cwd == "" || spec.Tmp == "" {
		return nil, errs.E(errs.Invalid, "execute: spec needs cwd and tmp")
	}
	pol, err := e.policy(spec)
	if err != nil {
		return nil, err
	}
	jobs, err := e.plan(a, spec)
	if err != nil {
		return nil, err
	}
	prep, err := pol.Prepare(e.o.Sandbox.AllowUnsandboxed)
	if err != nil {
		return nil, err
	}
	defer prep.Close()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	r := &run{e: e, spec: spec, prep: prep, env: e.env(spec, pol), overall: a.timeout}
	res := r.pipeline(ctx, jobs)
	res.Duration = time.Since(start)
	if err := ctx.Err(); err == context.Canceled {
		return res, errs.E(errs.Interrupted, "execute_code")
	}
	return res, nil
}

// Warm prepares what a stage under spec would run under, and lets it go:
// the Landlock ruleset of a policy not used yet (a new session's, whose
// cwd and tmp are among its paths) took 2 to 3 ms of its first call, and
// is cached for the call that follows (internal/sandbox/rulecache.go).
// The agent calls it while a session's first request is with the model.
func (e *Executor) Warm(spec Spec) error {
	pol, err := e.policy(spec)
	if err != nil {
		return err
	}
	prep, err := pol.Prepare(e.o.Sandbox.AllowUnsandboxed)
	if err != nil {
		return err
	}
	return prep.Close()
}

// policy is the sandbox policy of spec's stages.
func (e *Executor) policy(spec Spec) (*sandbox.Policy, error) {
	prof, err := e.o.Sandbox.Profile(spec.Policy)
	if err != nil {
		return nil, errs.E(errs.Invalid, err)
	}
	// The ollie binary itself and its MCP bridge may be read and run by
	// stages, so tools can use their client verbs (t/mcp runs ollie-mcp);
	// they hold no secret, and what they can do confined is what the
	// stage can.
	prof.Read = append(append(append([]string(nil), prof.Read...), spec.Read...), e.o.Exe, e.mcp)
	prof.Write = append(append([]string(nil), prof.Write...), spec.Write...)
	pol, err := sandbox.New(policyName(spec.Policy, e.o.Sandbox), prof, sandbox.Paths{
		Home: e.o.Home, Cwd: spec.Cwd, Tmp: spec.Tmp, Tools: spec.Tools, Private: e.o.Private,
		Programs: e.programs,
	})
	if err != nil {
		return nil, err
	}
	pol.Guard = e.o.Ports
	return pol, nil
}

func policyName(name string, s config.Sandbox) string {
	if name == "" {
		return s.Default
	}
	return name
}

// env is the environment of every stage: the allow-listed base, the
// sandbox's PATH, HOME and TMPDIR in the scratch directory (so tools that
// keep caches in $HOME work without seeing the real one), OLLIE_BIN (the
// ollie executable), then the session's own variables.
func (e *Executor) env(spec Spec, pol *sandbox.Policy) []string {
	return sandbox.MergeEnv(e.base, append([]string{
		"PATH=" + e.o.Sandbox.Path,
		"HOME=" + spec.Tmp,
		"TMPDIR=" + spec.Tmp,
		"PWD=" + spec.Cwd,
		"OLLIE_SANDBOX=" + pol.Name,
		"OLLIE_BIN=" + e.o.Exe,
	}, spec.Env...)...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
