package sandbox

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"ollie.dev/ollie/internal/errs"
)

// Mode is how a stage is confined.
type Mode string

const (
	// Landlock: the full sandbox.
	Landlock Mode = "landlock"
	// Unsandboxed: no Landlock (the kernel lacks it and the configuration
	// allows running anyway); limits, seccomp and capabilities still apply.
	Unsandboxed Mode = "unsandboxed"
	// Elevated: a stage that was granted leave to run outside the
	// sandbox. Only its environment is still filtered.
	Elevated Mode = "elevated"
)

var abi = sync.OnceValue(func() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
})

// ABI returns the Landlock ABI version of the running kernel, 0 if it has
// none.
func ABI() int { return abi() }

// Prepared is a policy made ready to start processes: the Landlock ruleset
// is built once and shared by every stage of a call.
type Prepared struct {
	Policy  *Policy
	Mode    Mode
	ruleset *os.File // nil unless Mode is Landlock
	flags   uint32
	guard   string // the port guard's cgroup, "" for none
}

// guardPorts sets up the port guard for the policy's Guard, and returns
// the policy to build the Landlock ruleset from: the policy itself, or,
// where there can be no guard, a copy whose binding Landlock narrows to
// ephemeral ports. Connect ports cannot be denied that way: a policy
// with the network on is then refused.
func (pr *Prepared) guardPorts() (*Policy, error) {
	p := pr.Policy
	if p.Guard.empty() || p.denies(syscall.AF_INET) && p.denies(syscall.AF_INET6) {
		return p, nil
	}
	dir, err := guardDir(p.Guard)
	if err == nil {
		pr.guard = dir
		return p, nil
	}
	if len(p.Guard.Connect) > 0 || pr.Mode != Landlock || ABI() < 4 {
		return nil, errs.E(errs.Unsupported, fmt.Sprintf("sandbox: cannot keep stages from ports %v (%v); "+
			"run the daemon as root on cgroup v2, or use a profile without network", p.Guard.bindDenied(), err))
	}
	return narrowBind(p), nil
}

// narrowBind is p with binding narrowed by Landlock so that no port of
// p.Guard can be bound: to ephemeral ports (port 0) if p leaves TCP
// alone, to its own bind list without the guarded ports otherwise.
func narrowBind(p *Policy) *Policy {
	q := *p
	switch {
	case !q.Net.Restrict:
		q.Net = Net{Restrict: true, BindOnly: true, Bind: []uint16{0}}
	case len(q.Net.Bind) > 0:
		q.Net.Bind = slices.DeleteFunc(slices.Clone(q.Net.Bind), func(port uint16) bool {
			return slices.Contains(p.Guard.bindDenied(), port)
		})
		if len(q.Net.Bind) == 0 {
			q.Net.Bind = []uint16{0}
		}
	}
	return &q
}

// Prepare builds the ruleset for p. A kernel without Landlock is refused
// unless allowUnsandboxed is set.
func (p *Policy) Prepare(allowUnsandboxed bool) (*Prepared, error) {
	mode, err := chooseMode(ABI(), allowUnsandboxed)
	if err != nil {
		return nil, err
	}
	pr := &Prepared{Policy: p, Mode: mode}
	lp, err := pr.guardPorts()
	if err != nil {
		return nil, err
	}
	if mode != Landlock {
		return pr, nil
	}
	// go-landlock does not retry EINTR; building the ruleset again from
	// scratch is safe (the failed one is closed).
	type built struct {
		fd    int
		flags uint32
	}
	c := landlockConfig(lp)
	fd, flags, err := reuseRuleset(c, lp, func(ids []fileID) (int, uint32, error) {
		b, err := retry1(func() (built, error) {
			fd, flags, err := buildRuleset(c, lp, ids)
			return built{fd, flags}, err
		})
		return b.fd, b.flags, err
	})
	if err != nil {
		return nil, errs.E(errs.Other, "sandbox: landlock ruleset", err)
	}
	if fd < 0 {
		return nil, errs.E(errs.Unsupported, "sandbox: landlock restricts nothing on this kernel")
	}
	pr.ruleset, pr.flags = os.NewFile(uintptr(fd), "landlock-ruleset"), flags
	return pr, nil
}

// chooseMode decides between the sandbox and running without one.
func chooseMode(abi int, allowUnsandboxed bool) (Mode, error) {
	switch {
	case abi > 0:
		return Landlock, nil
	case allowUnsandboxed:
		return Unsandboxed, nil
	}
	return "", errs.E(errs.Unsupported, "sandbox: this kernel has no landlock; "+
		"execute_code refuses to run unconfined unless sandbox.allow_unsandboxed is set in the configuration")
}

// Close releases the ruleset.
func (pr *Prepared) Close() error {
	if pr.ruleset == nil {
		return nil
	}
	return pr.ruleset.Close()
}

// landlockConfig handles every file system right and IPC scope the kernel
// knows, and the network only as far as the policy restricts it: leaving
// UDP unhandled keeps DNS working where TCP is narrowed to a few ports.
func landlockConfig(p *Policy) landlock.Config {
	c := landlock.V11
	if !p.denies(syscall.AF_UNIX) {
		// The profile allows unix sockets; ABI 9 would otherwise refuse
		// connecting to them by path.
		c.HandledAccessFS &^= ll.AccessFSResolveUnix
	}
	n := p.Net
	c.HandledAccessNet = 0
	switch {
	case n.Restrict && n.BindOnly:
		c.HandledAccessNet = ll.AccessNetBindTCP
	case n.Restrict:
		c.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		if len(n.Connect) == 0 && len(n.Bind) == 0 {
			c.HandledAccessNet |= ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP
		}
	}
	return c.BestEffort()
}

func (p *Policy) denies(family int) bool {
	return slices.Contains(p.DenyFamilies, family)
}

func (p *Policy) rules() []landlock.Rule {
	rules := []landlock.Rule{
		landlock.RODirs(p.RODirs...).IgnoreIfMissing(),
		landlock.ROFiles(p.ROFiles...).IgnoreIfMissing(),
		// Refer lets mv and git rename across directories of the workspace.
		landlock.RWDirs(p.RWDirs...).WithRefer().IgnoreIfMissing(),
		landlock.RWFiles(p.RWFiles...).IgnoreIfMissing(),
	}
	return append(rules, p.netRules()...)
}

// netRules are the network rules of p.
func (p *Policy) netRules() []landlock.Rule {
	var rules []landlock.Rule
	for _, port := range p.Net.Connect {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	for _, port := range p.Net.Bind {
		rules = append(rules, landlock.BindTCP(port))
	}
	return rules
}
