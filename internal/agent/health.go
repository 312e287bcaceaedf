package agent

import (
	"ollie.dev/ollie/internal/session"
	"strings"
	"sync"
	"time"
)

// health is what each backend did at its last request, for the
// backends file and ollie status: learned from the turns, never by
// probing (a stat or a read of backends calls no network).
type health struct {
	mu   sync.Mutex
	last map[string]outcome // by backend name
}

type outcome struct {
	at  time.Time
	err string // "" when it answered
}

func (h *health) note(name string, err error) {
	o := outcome{at: time.Now()}
	if err != nil {
		o.err = strings.SplitN(err.Error(), "\n", 2)[0]
	}
	h.mu.Lock()
	if h.last == nil {
		h.last = map[string]outcome{}
	}
	h.last[name] = o
	h.mu.Unlock()
}

// BackendState says whether backend name answered its last request:
// "ok", "failed", or "-" when it was not asked since the daemon started;
// ago is how long since.
func (r *Runner) BackendState(name string) (state string, ago time.Duration) {
	r.health.mu.Lock()
	o, ok := r.health.last[name]
	r.health.mu.Unlock()
	switch {
	case !ok:
		return "-", 0
	case o.err != "":
		return "failed", time.Since(o.at)
	}
	return "ok", time.Since(o.at)
}

// InUse says which backend and model a session with meta would use now:
// its own settings, else its agent's, else the backend's configured
// model, else the first model the backend listed if one was asked; ""
// for what is not known without asking the network.
func (r *Runner) InUse(meta session.Meta) (backendName, model string) {
	agentBackend, agentModel := "", ""
	if a, err := r.loadAgent(meta.Agent); err == nil {
		agentBackend, agentModel = a.Backend, a.Model
	}
	be, err := r.backend(meta.Backend, agentBackend)
	if err != nil {
		return firstOf(meta.Backend, agentBackend), firstOf(meta.Model, agentModel)
	}
	r.mu.Lock()
	listed := r.first[be.Name()]
	r.mu.Unlock()
	return be.Name(), firstOf(meta.Model, agentModel, r.configModel(be.Name()), listed)
}
