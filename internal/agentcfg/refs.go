package agentcfg

import (
	"fmt"
	"sort"
	"strings"
)

// Refs are the names an agent configuration may refer to: what the daemon
// is configured with and what p/ holds. A nil list checks nothing of its
// kind (an empty one refuses every name), and a nil Part accepts every
// prompt part.
type Refs struct {
	Backends []string          // names from `backends`
	Profiles []string          // sandbox profile names from ollie.json
	Part     func(string) bool // reports whether p/NAME exists
	Parts    func() []string   // lists p/, for the error; may be nil
}

// CheckRefs checks that every name a refers to exists, so that a
// configuration naming a backend, a sandbox profile or a prompt part
// that is not there fails when it is written, not when a session starts.
func (a *Agent) CheckRefs(r Refs) error {
	if a.Backend != "" && r.Backends != nil && !has(r.Backends, a.Backend) {
		return fmt.Errorf("backend: no backend %q (configured: %s)", a.Backend, list(r.Backends))
	}
	if a.Sandbox != "" && r.Profiles != nil && !has(r.Profiles, a.Sandbox) {
		return fmt.Errorf("sandbox: no profile %q (profiles: %s)", a.Sandbox, list(r.Profiles))
	}
	for i, p := range a.Prompt {
		if p.File == "" || r.Part == nil || r.Part(p.File) {
			continue
		}
		msg := fmt.Sprintf("prompt[%d]: no prompt part p/%s", i, p.File)
		if r.Parts != nil {
			msg += " (p/ holds: " + list(r.Parts()) + ")"
		}
		return fmt.Errorf("%s", msg)
	}
	return nil
}

func has(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := append([]string(nil), names...)
	sort.Strings(s)
	return strings.Join(s, ", ")
}
