package config

import "fmt"

// Sandbox is the sandbox section of ollie.json: named policy profiles for
// execute_code. An agent configuration picks a profile by name; the model
// never does.
type Sandbox struct {
	// Default names the profile used when an agent names none.
	Default string `json:"default,omitempty"`
	// AllowUnsandboxed lets execute_code run without Landlock on a kernel
	// that lacks it. Off by default: such a kernel is refused.
	AllowUnsandboxed bool `json:"allow_unsandboxed,omitempty"`
}

// DefaultSandbox is the sandbox configuration when the file says nothing.
func DefaultSandbox() Sandbox { return Sandbox{Default: "workspace"} }

func (s *Sandbox) check() error {
	if s.Default == "" {
		s.Default = "workspace"
	}
	if !ValidName(s.Default) {
		return fmt.Errorf("bad default profile name %q", s.Default)
	}
	return nil
}
