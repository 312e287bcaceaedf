// Package agent is the loop that runs a session's turns: it composes the
// system prompt, streams the model's reply into chat, runs the tool calls
// the model makes (execute_code, the only tool) in the order it gave them,
// feeds the results back, and repeats until the model stops, the step
// limit is reached (then the model must summarize), or the turn is
// stopped. It retries rate limits, server errors and cut streams visibly,
// and compacts the history when it nears the context window.
//
// The loop knows nothing of 9P: it reads and writes its session through
// the session.Turn it is given.
package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"ollie.dev/ollie/internal/agentcfg"
	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/dirwatch"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/redact"
	"ollie.dev/ollie/internal/session"
)

// Options configure a Runner.
type Options struct {
	Config   *config.Config
	Backends []backend.Backend // in configuration order; the first is the default
	Exec     Executor          // runs execute_code; nil makes every call fail
	// Mount is where the tree is mounted, given to tools as $OLLIE; "" if
	// it is not mounted.
	Mount string
	// Retries is how often a request is retried after a retryable error;
	// 0 means 5. RetryBase is the first back-off; 0 means one second.
	Retries   int
	RetryBase time.Duration
	// MaxRetryWait caps the total wait of one request's retries; 0 means
	// five minutes.
	MaxRetryWait time.Duration
	Logf         func(format string, args ...any)
	// Redact scrubs the environment of hooks and x/ plugins (no keys);
	// nil drops only variables whose names look like credentials.
	Redact *redact.Redactor
}

// Executor runs one execute_code call; *execute.Executor is the real one.
type Executor interface {
	Run(ctx context.Context, spec execute.Spec, args []byte) (*execute.Result, error)
}

// Runner implements session.Runner.
type Runner struct {
	o        Options
	running  atomic.Int32 // turns running (Run)
	backends map[string]backend.Backend
	health   health // what each backend did last (health.go)

	mu     sync.Mutex
	fenced map[string]bool                 // backend/model pairs that cannot call tools natively
	noReas map[string]bool                 // backend/model pairs that refused a reasoning parameter
	first  map[string]string               // backend -> its first listed model, when none is configured
	idx    map[string]kept[string]         // t/ or sk/ -> its index, while it is unchanged
	agents map[string]kept[agentcfg.Agent] // a file of a/ -> its configuration, while a/ is unchanged (70 µs a read)
	parts  map[string]kept[string]         // a file of p/ -> its text, while p/ is unchanged
	watch  *dirwatch.Watch                 // of the directories behind idx
	hist   map[string]*histCache           // session id -> decoded history
}

var _ session.Runner = (*Runner)(nil)

// New returns a Runner.
func New(o Options) *Runner {
	if o.Retries == 0 {
		o.Retries = 5
	}
	if o.RetryBase == 0 {
		o.RetryBase = time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	r := &Runner{o: o, backends: map[string]backend.Backend{}, fenced: map[string]bool{}, noReas: map[string]bool{}, first: map[string]string{}, idx: map[string]kept[string]{}, agents: map[string]kept[agentcfg.Agent]{}, parts: map[string]kept[string]{}, hist: map[string]*histCache{}, watch: dirwatch.New()}
	runtime.AddCleanup(r, func(w *dirwatch.Watch) { w.Close() }, r.watch)
	for _, b := range o.Backends {
		r.backends[b.Name()] = b
	}
	return r
}

// setup is what one turn works with, resolved from the session's settings
// over its agent configuration over the backend's defaults.
type setup struct {
	agent   *agentcfg.Agent
	be      backend.Backend
	model   string
	meta    session.Meta
	system  string
	fenced  bool
	window  int
	maxStep int
	step    int    // the current step of the turn, from 1
	plan    string // the session's plan, re-read at every step
	// lastPrompt is the input size the last request reported, and lastLen
	// the number of history messages it carried (see estimate).
	lastPrompt, lastLen int
}

func (r *Runner) setup(ctx context.Context, t *session.Turn) (*setup, error) {
	meta := t.Meta()
	a, err := r.loadAgent(meta.Agent)
	if err != nil {
		return nil, err
	}
	st := &setup{agent: a, meta: meta}
	be, err := r.backend(meta.Backend, a.Backend)
	if err != nil {
		return nil, err
	}
	st.be = be
	if st.model, err = r.model(ctx, be, firstOf(meta.Model, a.Model)); err != nil {
		return nil, err
	}
	st.maxStep = firstInt(meta.Params.MaxSteps, a.MaxSteps, 50)
	st.fenced = r.isFenced(be.Name(), st.model)
	if st.system, err = r.compose(ctx, a, meta, st); err != nil {
		return nil, err
	}
	st.window = r.window(ctx, be, a, st.model)
	return st, nil
}

// model is the model a turn asks be for: the one named, else none (the
// backend's configured one), else the first be lists.
func (r *Runner) model(ctx context.Context, be backend.Backend, named string) (string, error) {
	if named != "" || r.configModel(be.Name()) != "" {
		return named, nil
	}
	return r.firstModel(ctx, be)
}

// window is the context window of model on be for agent a: a's own,
// else what be says (0 if it cannot tell).
func (r *Runner) window(ctx context.Context, be backend.Backend, a *agentcfg.Agent, model string) int {
	if a.ContextWindow > 0 {
		return a.ContextWindow
	}
	w, err := be.ContextWindow(ctx, model)
	if err != nil {
		return 0
	}
	return w
}

// WarmBackend asks, ahead of the first turn, what the first turn of
// agent's sessions asks the model's server before its request: the model
// when none is configured (a local server's list), and its context
// window. Both are kept for every later turn (a failure is not: the turn
// asks again, and reports it). On a first turn they took 1.5 to 2.5 ms
// of new connections and cold code. The daemon calls it in the
// background once it serves.
func (r *Runner) WarmBackend(ctx context.Context, agent string) {
	a, err := r.loadAgent(agent)
	if err != nil {
		return
	}
	be, err := r.backend("", a.Backend)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	if model, err := r.model(ctx, be, a.Model); err == nil {
		r.window(ctx, be, a, model)
	}
}

// warmTimeout bounds WarmBackend: a server that does not answer is no
// reason to keep a request open.
const warmTimeout = 10 * time.Second

func (r *Runner) configModel(be string) string {
	for _, b := range r.o.Config.Backends {
		if b.Name == be {
			return b.Model
		}
	}
	return ""
}

// firstModel picks the model of a backend configured without one (a local
// server usually serves a single model): the first it lists.
func (r *Runner) firstModel(ctx context.Context, be backend.Backend) (string, error) {
	r.mu.Lock()
	m, ok := r.first[be.Name()]
	r.mu.Unlock()
	if ok {
		return m, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ms, err := be.Models(lctx)
	if backend.IsUnreachable(err) {
		return "", err // it says where and what to do; a model name would not help
	}
	if err != nil {
		return "", errs.E(errs.KindOf(err), "backend "+be.Name()+" has no default model and listing its models failed; set one with model= (cfg, s/new or the agent)", err)
	}
	if len(ms) == 0 {
		return "", errs.E(errs.Invalid, "backend "+be.Name()+" lists no models; set one with model=")
	}
	r.mu.Lock()
	r.first[be.Name()] = ms[0].ID
	r.mu.Unlock()
	return ms[0].ID, nil
}

// CheckAgent accepts the name of a valid agent configuration in a/, as
// the check of a new session's settings: it reads what every turn reads,
// the configuration kept while a/ is unchanged (70 µs of a session's
// creation when read anew).
func (r *Runner) CheckAgent(name string) error {
	if !config.ValidName(name) {
		return errs.E(errs.Invalid, fmt.Sprintf("bad agent name %q", name))
	}
	_, err := r.loadAgent(name)
	switch {
	case err == nil:
		return nil
	case errs.Is(err, errs.NotExist):
		// Invalid, not NotExist: the file written (cfg, s/new, ctl)
		// exists; the value in it is what is wrong.
		return errs.E(errs.Invalid, "no agent "+name+" (no a/"+name+".json)")
	}
	return errs.E(errs.Invalid, err.Error())
}

func (r *Runner) loadAgent(name string) (*agentcfg.Agent, error) {
	a, err := keptFile(r, r.agents, filepath.Join(r.o.Config.ConfigDir, "a"), name+".json", func(b []byte, err error) (agentcfg.Agent, error) {
		if err != nil {
			return agentcfg.Agent{}, errs.E(errs.NotExist, "agent "+name+": no a/"+name+".json")
		}
		a, err := agentcfg.Parse(b)
		if err != nil {
			return agentcfg.Agent{}, errs.E(errs.Invalid, "a/"+name+".json: "+err.Error())
		}
		return *a, nil
	})
	if err != nil {
		return nil, err
	}
	return &a, nil // the caller's own: the kept one stays as read
}

func (r *Runner) isFenced(be, model string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fenced[be+"\x00"+model]
}

func (r *Runner) setFenced(be, model string) {
	r.mu.Lock()
	r.fenced[be+"\x00"+model] = true
	r.mu.Unlock()
}

func (r *Runner) noReasoning(be, model string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.noReas[be+"\x00"+model]
}

func (r *Runner) setNoReasoning(be, model string) {
	r.mu.Lock()
	r.noReas[be+"\x00"+model] = true
	r.mu.Unlock()
}

// Models lists the models of the session's backend.
func (r *Runner) Models(ctx context.Context, s *session.Session) ([]string, error) {
	meta := s.Meta()
	agentBackend := ""
	if meta.Backend == "" {
		if a, err := r.loadAgent(meta.Agent); err == nil {
			agentBackend = a.Backend
		}
	}
	be, err := r.backend(meta.Backend, agentBackend)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ms, err := be.Models(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out, nil
}

// backend picks a session's backend: its own setting, else its agent's,
// else the first configured.
func (r *Runner) backend(session, agent string) (backend.Backend, error) {
	name := firstOf(session, agent)
	if name == "" && len(r.o.Backends) > 0 {
		name = r.o.Backends[0].Name()
	}
	be, ok := r.backends[name]
	if !ok {
		return nil, errs.E(errs.NotExist, "no backend "+name+" configured (see backends)")
	}
	return be, nil
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func firstInt(n ...int) int {
	for _, x := range n {
		if x > 0 {
			return x
		}
	}
	return 0
}
