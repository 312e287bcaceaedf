// Package mcplive keeps the long-lived MCP servers of sessions: one
// `ollie-mcp -s NAME -private proxy` per session and configured server,
// started on first use under the session's sandbox policy, exactly as a
// stage of the session would run it, and owned by the daemon, so that a
// stateful server keeps its state across t/mcp calls. A server ends when
// its session is removed, when it was idle for Options.Idle, and when the
// daemon stops. A stage learns its own session's servers through
// s/<id>/mcp (NAMESPACE.md), never another session's.
package mcplive

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/mcpconf"
	"ollie.dev/ollie/internal/session"
)

// Defaults of Options.
const (
	DefaultMax   = 8
	DefaultIdle  = 30 * time.Minute
	startTimeout = 2 * time.Minute // an npx server may download its package first
)

// Options configure a Registry.
type Options struct {
	// Start starts the MCP bridge, ollie-mcp, with args under spec
	// (execute.Executor.StartMCP).
	Start func(spec execute.Spec, args []string, stdout, stderr *os.File) (*execute.Long, error)
	// Spec is the stage spec of session s now: its policy, cwd, env and
	// tree grants, as its next execute_code call would have them.
	Spec func(s *session.Session) (execute.Spec, error)
	// Servers is the list a server must be in (t/mcp.d/servers.json):
	// a stage names a server, never a command.
	Servers string
	Max     int           // servers per session; 0 is DefaultMax
	Idle    time.Duration // a server unused this long ends; 0 is DefaultIdle
	Logf    func(format string, args ...any)
}

// A Registry holds the servers of every session. It is safe for
// concurrent use.
type Registry struct {
	o      Options
	mu     sync.Mutex
	m      map[string]map[string]*entry // session id, server name
	closed bool
	stop   chan struct{}
}

type entry struct {
	ready chan struct{} // closed once started or failed
	url   string
	err   error
	key   string // the spec it runs under
	l     *execute.Long
	used  time.Time
}

// New returns a registry; Watch starts its reaping.
func New(o Options) *Registry {
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Registry{o: o, m: map[string]map[string]*entry{}, stop: make(chan struct{})}
}

// URL is the endpoint of session s's server name, started now if it is
// not running (or runs under a spec the session no longer has).
func (r *Registry) URL(s *session.Session, name string) (string, error) {
	name = strings.TrimSpace(name)
	all, err := mcpconf.LoadServers(r.o.Servers)
	if err != nil {
		return "", errs.E(errs.Invalid, err)
	}
	if _, ok := all[name]; !ok {
		return "", errs.E(errs.NotExist, fmt.Sprintf("no MCP server %q in t/mcp.d/servers.json (have: %s)", name, strings.Join(all.Names(), " ")))
	}
	spec, err := r.o.Spec(s)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%q", []any{spec.Policy, spec.Cwd, spec.Tmp, spec.Tools, spec.Env, spec.Read, spec.Write})
	id := s.ID()
	r.mu.Lock()
	if r.closed || s.Removed() {
		r.mu.Unlock()
		return "", errs.E(errs.Unavailable, "the session or the daemon is ending")
	}
	e := r.m[id][name]
	if e != nil && (e.key != key || e.exited()) {
		// Never looser than the session is now: a server started under
		// an older policy or environment is replaced.
		delete(r.m[id], name)
		go e.end()
		e = nil
	}
	if e == nil {
		if len(r.m[id]) >= r.o.Max {
			r.mu.Unlock()
			return "", errs.E(errs.Busy, fmt.Sprintf("this session already runs %d MCP servers, the most it may", r.o.Max))
		}
		e = &entry{ready: make(chan struct{}), key: key}
		if r.m[id] == nil {
			r.m[id] = map[string]*entry{}
		}
		r.m[id][name] = e
		r.mu.Unlock()
		e.start(r.o, spec, name)
		r.mu.Lock()
		if e.err != nil && r.m[id][name] == e {
			delete(r.m[id], name)
		}
	}
	e.used = time.Now()
	r.mu.Unlock()
	<-e.ready
	return e.url, e.err
}

// start runs the proxy and reads the URL it prints.
func (e *entry) start(o Options, spec execute.Spec, name string) {
	defer close(e.ready)
	outR, outW, err := os.Pipe()
	if err != nil {
		e.err = err
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		e.err = err
		return
	}
	l, err := o.Start(spec, []string{"-servers", o.Servers, "-s", name,
		"-listen", "127.0.0.1:0", "-private", "proxy"}, outW, errW)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		e.err = err
		return
	}
	e.l = l
	// The server's stderr is drained for as long as it runs (a pipe no
	// one reads would stop it); its start keeps the first lines, to say
	// why it failed.
	stderr := &capped{max: 4 << 10}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer errR.Close()
		io.Copy(stderr, errR)
	}()
	outR.SetReadDeadline(time.Now().Add(startTimeout))
	line, err := bufio.NewReader(io.LimitReader(outR, 1<<10)).ReadString('\n')
	outR.Close()
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		l.Stop()
		<-drained
		why := strings.TrimSpace(stderr.String())
		if why == "" && err != nil {
			why = err.Error()
		}
		e.err = errs.E(errs.Other, fmt.Sprintf("MCP server %s did not start: %s", name, why))
		return
	}
	e.url = strings.TrimSpace(line)
	o.Logf("mcp: session %s: server %s at pid %d", spec.Session, name, l.Pid)
}

func (e *entry) exited() bool {
	select {
	case <-e.ready:
	default:
		return false // starting
	}
	if e.l == nil {
		return true
	}
	select {
	case <-e.l.Done():
		return true
	default:
		return false
	}
}

// end stops the server once it has started.
func (e *entry) end() {
	<-e.ready
	if e.l != nil {
		e.l.Stop()
	}
}

// Watch ends the servers of the sessions m no longer has, and idle
// servers, until Close.
func (r *Registry) Watch(m *session.Manager) {
	go func() {
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for {
			// Asked for before the reaping, so that no removal during it
			// goes unnoticed until the next tick.
			changed := m.Changed()
			r.reap(func(id string) bool {
				s, ok := m.Get(id)
				return ok && s.ID() == id && !s.Removed()
			})
			select {
			case <-r.stop:
				return
			case <-changed:
			case <-tick.C:
			}
		}
	}()
}

// reap ends the servers of sessions that are gone and those idle too long.
func (r *Registry) reap(alive func(id string) bool) {
	var ended []*entry
	r.mu.Lock()
	for id, servers := range r.m {
		gone := !alive(id)
		for name, e := range servers {
			if gone || e.exited() || time.Since(e.used) > r.o.Idle && !e.starting() {
				ended = append(ended, e)
				delete(servers, name)
			}
		}
		if len(servers) == 0 {
			delete(r.m, id)
		}
	}
	r.mu.Unlock()
	for _, e := range ended {
		e.end()
	}
}

func (e *entry) starting() bool {
	select {
	case <-e.ready:
		return false
	default:
		return true
	}
}

// Close ends every server and refuses new ones.
func (r *Registry) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	m := r.m
	r.m = map[string]map[string]*entry{}
	r.mu.Unlock()
	close(r.stop)
	var wg sync.WaitGroup
	for _, servers := range m {
		for _, e := range servers {
			wg.Go(e.end)
		}
	}
	wg.Wait()
}

// Running counts the servers running or starting, for tests and stats.
func (r *Registry) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, servers := range r.m {
		n += len(servers)
	}
	return n
}

// capped keeps the first max bytes written to it.
type capped struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}
