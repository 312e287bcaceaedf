package batch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
)

// Job is one fork-join job.
type Job struct {
	r    *Registry
	id   string
	dir  string
	spec Spec
	m    *session.Manager // the members, one session each
	cap  chan struct{}    // the parent's concurrency cap, shared by its jobs

	mu      sync.Mutex
	members []*session.Session // in submission order
	done    chan struct{}      // closed when every member has settled
	stopped bool
}

// ID returns the job's id.
func (j *Job) ID() string { return j.id }

// Spec returns the job's spec.
func (j *Job) Spec() Spec { return j.spec }

// Members returns the member sessions in submission order.
func (j *Job) Members() []*session.Session {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]*session.Session(nil), j.members...)
}

// Manager returns the manager of the job's member sessions.
func (j *Job) Manager() *session.Manager { return j.m }

// New starts a job. perParent caps how many members of the jobs of one
// parent run at once (0: no cap beyond the daemon's).
func (r *Registry) New(sp Spec, perParent int) (*Job, error) {
	if sp.Parallel < 1 {
		sp.Parallel = 1
	}
	// Ids are random within their second: claim the directory, or draw
	// again.
	var id string
	for {
		id = session.NewID()
		err := os.Mkdir(r.jobDir(id), 0700)
		if err == nil {
			break
		}
		if !os.IsExist(err) {
			return nil, err
		}
	}
	j, err := r.open(id, sp)
	if err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(j.dir, "job.json"), sp); err != nil {
		os.RemoveAll(j.dir)
		return nil, err
	}
	for k := 1; k <= sp.Parallel; k++ {
		s, err := j.m.New(session.Spec{Cwd: sp.Cwd, Name: fmt.Sprint(k), Agent: sp.Agent, Backend: sp.Backend,
			Model: sp.Model, Parent: sp.Parent, Sandbox: sp.Sandbox})
		if err != nil {
			j.m.Close()
			os.RemoveAll(j.dir)
			return nil, err
		}
		j.members = append(j.members, s)
	}
	j.cap = r.parentCap(sp.Parent, perParent)
	r.mu.Lock()
	r.jobs[id] = j
	r.mu.Unlock()
	go j.run()
	return j, nil
}

var parentCaps sync.Map // parent session id -> chan struct{}

func (r *Registry) parentCap(parent string, n int) chan struct{} {
	if parent == "" || n <= 0 {
		return nil
	}
	c, _ := parentCaps.LoadOrStore(parent, make(chan struct{}, n))
	return c.(chan struct{})
}

func (r *Registry) open(id string, sp Spec) (*Job, error) {
	dir := r.jobDir(id)
	so := r.o.Session
	so.Dir, so.TrDir, so.TreeDir = dir, "", "b/"+id
	m, err := session.Open(so)
	if err != nil {
		return nil, err
	}
	return &Job{r: r, id: id, dir: dir, spec: sp, m: m, done: make(chan struct{})}, nil
}

// load reopens a job from disk. Its members are sessions like any other:
// one cut by the restart waits for ctl resume.
func (r *Registry) load(id string) (*Job, error) {
	var sp Spec
	if err := readJSON(filepath.Join(r.jobDir(id), "job.json"), &sp); err != nil {
		return nil, err
	}
	j, err := r.open(id, sp)
	if err != nil {
		return nil, err
	}
	j.members = j.m.List() // ids sort by creation: submission order
	go j.watch()
	return j, nil
}

// run submits the prompt to each member, within the caps, in order.
func (j *Job) run() {
	var wg sync.WaitGroup
	for _, s := range j.Members() {
		j.acquire()
		j.mu.Lock()
		stopped := j.stopped
		j.mu.Unlock()
		if stopped {
			j.release()
			break
		}
		if err := s.Submit(j.spec.Prompt); err != nil {
			j.r.o.Logf("job %s member %s: %v", j.id, s.Name(), err)
			j.release()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer j.release()
			s.Wait(nil)
		}()
	}
	wg.Wait()
	j.finished()
	close(j.done)
}

// watch closes done once the members of a reloaded job settle.
func (j *Job) watch() {
	for _, s := range j.Members() {
		s.Wait(nil)
	}
	if _, err := os.Stat(filepath.Join(j.dir, doneFile)); err != nil {
		j.finished()
	}
	close(j.done)
}

func (j *Job) acquire() {
	j.r.sem <- struct{}{}
	if j.cap != nil {
		j.cap <- struct{}{}
	}
}

func (j *Job) release() {
	if j.cap != nil {
		<-j.cap
	}
	<-j.r.sem
}

func (j *Job) stop() {
	j.mu.Lock()
	j.stopped = true
	j.mu.Unlock()
	for _, s := range j.Members() {
		s.Kill()
	}
}

// Done is closed when every member has settled.
func (j *Job) Done() <-chan struct{} { return j.done }

// State is running, done, or failed (some member ended in error).
func (j *Job) State() string {
	select {
	case <-j.done:
	default:
		return "running"
	}
	for _, s := range j.Members() {
		if st, _ := s.State(); st == session.Error {
			return "failed"
		}
	}
	return "done"
}

// Result renders the members' replies in submission order, each after a
// header line "=== K/N ===" (or "=== K/N error ===" with the error).
func (j *Job) Result() []byte {
	var b strings.Builder
	ms := j.Members()
	for k, s := range ms {
		st, why := s.State()
		if st == session.Error {
			fmt.Fprintf(&b, "=== %d/%d error ===\n%s\n", k+1, len(ms), why)
			continue
		}
		fmt.Fprintf(&b, "=== %d/%d ===\n", k+1, len(ms))
		reply := string(s.ReplyText())
		b.WriteString(reply)
		if reply != "" && !strings.HasSuffix(reply, "\n") {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// Wait blocks until the job is done or cancel is closed.
func (j *Job) Wait(cancel <-chan struct{}) error {
	select {
	case <-j.done:
		return nil
	case <-cancel:
		return errs.E(errs.Interrupted)
	}
}

func writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0600)
}

func readJSON(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
