// Package agentcfg defines an agent configuration, the JSON files in a/.
// Parsing is strict: unknown keys, wrong types and out-of-range values are
// errors that name the offending key, so a bad write to a/NAME.json fails
// on that write.
package agentcfg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"ollie.dev/ollie/internal/valid"
)

// Agent is one agent configuration.
type Agent struct {
	Description string `json:"description,omitempty"`
	Backend     string `json:"backend,omitempty"` // a name from `backends`; "" = the first
	Model       string `json:"model,omitempty"`   // "" = the backend's default
	// Prompt lists the parts of the system prompt, in order.
	Prompt      []Part   `json:"prompt,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	MaxSteps    int      `json:"max_steps,omitempty"`
	// Reasoning is how hard the model should think: off, low, medium or
	// high; ReasoningBudget the same as a number of tokens, for providers
	// that take one. Each backend maps them onto its provider's parameter.
	Reasoning       string `json:"reasoning,omitempty"`
	ReasoningBudget int    `json:"reasoning_budget,omitempty"`
	// Sandbox names the execute_code policy profile (see ollie.json).
	Sandbox string `json:"sandbox,omitempty"`
	// Approve lists exact commands an elevated stage may run without asking.
	Approve []string `json:"approve,omitempty"`
	// Hooks maps an event name to shell commands run with a JSON payload.
	Hooks map[string][]string `json:"hooks,omitempty"`
	// ContextWindow overrides the backend's reported window (tokens).
	ContextWindow int `json:"context_window,omitempty"`
	// CompactAt is the fraction of the window at which to compact (0.5–0.95).
	CompactAt float64 `json:"compact_at,omitempty"`
	// SpendLimit caps a session's cost in USD; 0 means no cap.
	SpendLimit float64 `json:"spend_limit_usd,omitempty"`
	// Concurrency caps the sub-agents one session may run at once.
	Concurrency int `json:"concurrency,omitempty"`
	// PassEnv names credential-looking variables (GITHUB_TOKEN ...) that
	// hooks and x/ plugins may still see; a backend's key never passes.
	PassEnv []string `json:"pass_env,omitempty"`
}

// Part is one piece of the system prompt: a file in p/, or the output of
// a command (such as x/prime NAME), rendered with the session's variables.
type Part struct {
	File string `json:"file,omitempty"`
	Exec string `json:"exec,omitempty"`
}

// ReasoningEfforts are the values of the reasoning key (backend.Efforts).
var ReasoningEfforts = []string{"off", "low", "medium", "high"}

// Hook events an agent configuration may name.
var HookEvents = []string{"agentSpawn", "preTurn", "postTurn", "preTool", "postTool", "preCompact", "postCompact", "turnError"}

// ErrIncomplete marks a document that ends too early: not wrong, unfinished.
var ErrIncomplete = errors.New("incomplete JSON document")

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Parse decodes and checks an agent configuration.
func Parse(data []byte) (*Agent, error) {
	// encoding/json would replace bad bytes with U+FFFD, silently.
	if err := valid.TextPrefix("agent configuration", data); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "bad request: "))
	}
	var a Agent
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || (errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0) {
			return nil, ErrIncomplete
		}
		return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	return &a, nil
}

func (a *Agent) check() error {
	if err := a.checkNUL(); err != nil {
		return err
	}
	if a.Backend != "" && !nameRE.MatchString(a.Backend) {
		return fmt.Errorf("backend: bad name %q", a.Backend)
	}
	if a.Sandbox != "" && !nameRE.MatchString(a.Sandbox) {
		return fmt.Errorf("sandbox: bad profile name %q", a.Sandbox)
	}
	if t := a.Temperature; t != nil && (*t < 0 || *t > 2) {
		return fmt.Errorf("temperature: %v is outside 0..2", *t)
	}
	if a.MaxTokens < 0 || a.MaxTokens > 1<<20 {
		return fmt.Errorf("max_tokens: %d is outside 0..1048576", a.MaxTokens)
	}
	if a.Reasoning != "" && !has(ReasoningEfforts, a.Reasoning) {
		return fmt.Errorf("reasoning: %q is not one of %s", a.Reasoning, strings.Join(ReasoningEfforts, ", "))
	}
	if a.ReasoningBudget != 0 && (a.ReasoningBudget < 1024 || a.ReasoningBudget > 1<<20) {
		return fmt.Errorf("reasoning_budget: %d is outside 1024..1048576 tokens", a.ReasoningBudget)
	}
	if a.Reasoning == "off" && a.ReasoningBudget != 0 {
		return errors.New("reasoning_budget: a budget with reasoning off; drop one of them")
	}
	if a.MaxSteps < 0 || a.MaxSteps > 10000 {
		return fmt.Errorf("max_steps: %d is outside 0..10000", a.MaxSteps)
	}
	if a.CompactAt != 0 && (a.CompactAt < 0.5 || a.CompactAt > 0.95) {
		return fmt.Errorf("compact_at: %v is outside 0.5..0.95", a.CompactAt)
	}
	if a.SpendLimit < 0 || a.ContextWindow < 0 || a.Concurrency < 0 {
		return errors.New("spend_limit_usd, context_window and concurrency cannot be negative")
	}
	for i, p := range a.Prompt {
		switch {
		case (p.File == "") == (p.Exec == ""):
			return fmt.Errorf("prompt[%d]: give exactly one of file or exec", i)
		case p.File != "" && !nameRE.MatchString(p.File):
			return fmt.Errorf("prompt[%d]: file %q must be a name in p/", i, p.File)
		}
	}
	for _, n := range a.PassEnv {
		if !envNameRE.MatchString(n) {
			return fmt.Errorf("pass_env: bad variable name %q", n)
		}
	}
	for ev, cmds := range a.Hooks {
		if !known(ev) {
			return fmt.Errorf("hooks: unknown event %q (want one of %s)", ev, strings.Join(HookEvents, ", "))
		}
		for _, c := range cmds {
			if strings.TrimSpace(c) == "" {
				return fmt.Errorf("hooks.%s: empty command", ev)
			}
		}
	}
	return nil
}

func known(ev string) bool {
	for _, e := range HookEvents {
		if e == ev {
			return true
		}
	}
	return false
}

// checkNUL refuses a NUL written as \u0000 in a string that becomes a
// name, a command or a prompt: it would cut the string short where the
// daemon hands it to the system.
func (a *Agent) checkNUL() error {
	nul := func(s string) bool { return strings.IndexByte(s, 0) >= 0 }
	for _, f := range []struct{ key, v string }{{"description", a.Description}, {"backend", a.Backend}, {"model", a.Model}, {"sandbox", a.Sandbox}, {"reasoning", a.Reasoning}} {
		if nul(f.v) {
			return fmt.Errorf("%s: NUL character: want text", f.key)
		}
	}
	for i, p := range a.Prompt {
		if nul(p.File) || nul(p.Exec) {
			return fmt.Errorf("prompt[%d]: NUL character: want text", i)
		}
	}
	for i, c := range a.Approve {
		if nul(c) {
			return fmt.Errorf("approve[%d]: NUL character: want text", i)
		}
	}
	for ev, cmds := range a.Hooks {
		for _, c := range cmds {
			if nul(c) {
				return fmt.Errorf("hooks.%s: NUL character: want text", ev)
			}
		}
	}
	return nil
}
