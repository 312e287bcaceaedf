// Package batch runs fork-join jobs: N ephemeral sessions given one
// prompt, whose replies are gathered in submission order. A job lives in
// DataDir/b/<id>/: job.json, and one session directory per member.
//
// Jobs made from inside a session (its spawn file) belong to that session:
// they run under its sandbox policy, count against its agent's concurrency
// cap, and stop when it is stopped.
package batch

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/valid"
)

// Spec describes a job.
type Spec struct {
	Agent    string `json:"agent,omitempty"`
	Backend  string `json:"backend,omitempty"`
	Model    string `json:"model,omitempty"`
	Cwd      string `json:"cwd"`
	Parallel int    `json:"parallel"`
	Prompt   string `json:"prompt"`
	Parent   string `json:"parent,omitempty"`  // the session that spawned the job
	Sandbox  string `json:"sandbox,omitempty"` // inherited from the parent
}

// Options configure a Registry.
type Options struct {
	Dir string // DataDir/b
	// Session is the template of every member session's manager options
	// (runner, checks, logging); Dir and TrDir are set per job.
	Session session.Options
	// MaxRunning caps the member sessions running at once, daemon-wide.
	MaxRunning int
	// TrDir is where the members' transcripts go when a job is removed
	// (DataDir/tr); "" keeps none.
	TrDir string
	// Keep is how long a finished job stays before it is collected
	// (collect.go); 0 means DefaultKeep, negative never.
	Keep Keep
	Logf func(string, ...any)
}

// Registry holds every job.
type Registry struct {
	o   Options
	sem chan struct{} // daemon-wide running slots

	mu   sync.Mutex
	jobs map[string]*Job

	stopCollect chan struct{} // closed by Close
	closeOnce   sync.Once
}

// Open loads the jobs on disk. Members cut short by a restart are marked
// by their sessions and wait for `ctl resume`, as any session does.
func Open(o Options) (*Registry, error) {
	if o.MaxRunning <= 0 {
		o.MaxRunning = 8
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(o.Dir, 0700); err != nil {
		return nil, err
	}
	r := &Registry{o: o, sem: make(chan struct{}, o.MaxRunning), jobs: map[string]*Job{}}
	ents, err := os.ReadDir(o.Dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		j, err := r.load(e.Name())
		if err != nil {
			o.Logf("batch job %s not loaded: %v", e.Name(), err)
			continue
		}
		r.jobs[j.id] = j
	}
	r.stopCollect = make(chan struct{})
	go r.collect()
	return r, nil
}

// ParseSpec reads a job spec: key=value settings, a line "---", then the
// prompt. parse turns the settings part into a map (the tree's parser).
func ParseSpec(text string, parse func(string) (map[string]string, error)) (Spec, error) {
	if err := valid.String("job spec", text); err != nil {
		return Spec{}, err
	}
	head, prompt, ok := strings.Cut(text, "\n---\n")
	if !ok {
		if h, found := strings.CutSuffix(text, "\n---"); found {
			head, prompt, ok = h, "", true
		} else if p, found := strings.CutPrefix(text, "---\n"); found {
			head, prompt, ok = "", p, true // no settings: all defaults
		}
	}
	if !ok {
		return Spec{}, errs.E(errs.Invalid, "a job spec is key=value lines, a line ---, then the prompt")
	}
	kv, err := parse(head)
	if err != nil {
		return Spec{}, err
	}
	sp := Spec{Agent: kv["agent"], Backend: kv["backend"], Model: kv["model"], Cwd: kv["cwd"], Prompt: prompt, Parallel: 1}
	if p := kv["parallel"]; p != "" {
		if sp.Parallel, err = valid.Int("parallel", p, 1, MaxParallel); err != nil {
			return Spec{}, err
		}
	}
	if strings.TrimSpace(sp.Prompt) == "" {
		return Spec{}, errs.E(errs.Invalid, "the job has no prompt after the --- line")
	}
	return sp, nil
}

// MaxParallel is the most members one job may have.
const MaxParallel = 256

// SpecKeys are the settings a job spec accepts.
var SpecKeys = []string{"agent", "backend", "model", "cwd", "parallel"}

// Get returns a job by id.
func (r *Registry) Get(id string) (*Job, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	return j, ok
}

// List returns every job, oldest first.
func (r *Registry) List() []*Job {
	r.mu.Lock()
	out := make([]*Job, 0, len(r.jobs))
	for _, j := range r.jobs {
		out = append(out, j)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, k int) bool { return out[i].id < out[k].id })
	return out
}

// Remove stops a job's members and deletes it.
func (r *Registry) Remove(id string) error {
	r.mu.Lock()
	j, ok := r.jobs[id]
	delete(r.jobs, id)
	r.mu.Unlock()
	if !ok {
		return errs.E(errs.NotExist, "no job "+id)
	}
	j.stop()
	j.saveTranscripts()
	j.m.Close()
	return os.RemoveAll(j.dir)
}

// Stop stops a job's members.
func (r *Registry) Stop(id string) {
	if j, ok := r.Get(id); ok {
		j.stop()
	}
}

// StopChildren stops the jobs a session spawned (its ctl stop).
func (r *Registry) StopChildren(parent string) {
	for _, j := range r.List() {
		if j.spec.Parent == parent {
			j.stop()
		}
	}
}

// Close stops every job's running members.
func (r *Registry) Close() {
	r.closeOnce.Do(func() { close(r.stopCollect) })
	for _, j := range r.List() {
		j.m.Close()
	}
}

func (r *Registry) jobDir(id string) string { return filepath.Join(r.o.Dir, id) }
