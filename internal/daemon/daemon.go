// Package daemon runs the ollie server process: it builds the namespace,
// takes the lock, listens on the unix socket (and TCP when configured),
// serves 9P, and shuts everything down along one path.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"ollie.dev/ollie/internal/batch"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/ninep"
	"ollie.dev/ollie/internal/ns"
	"ollie.dev/ollie/internal/redact"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
	"ollie.dev/ollie/internal/who"
)

// Options configure a daemon beyond its Config.
type Options struct {
	Log *log.Logger // nil: the standard logger
	// Runner runs the turns of sessions (the agent loop).
	Runner session.Runner
	// CheckAgent accepts the name of a valid agent configuration; nil:
	// a/<name>.json is read and parsed at each check.
	CheckAgent func(name string) error
	// Models lists the models of a session's backend, for s/<id>/models.
	Models func(ctx context.Context, s *session.Session) ([]string, error)
	// Extra root entries (batch jobs) built by other layers.
	Extra []tree.Entry
	// Counters are extra stats/ files.
	Counters []ns.Counter
	// InUse says which backend and model a session uses now (s/idx).
	InUse func(session.Meta) (backend, model string)
	// SystemPrompt renders and records the system prompt a session's
	// next turn will send (s/<id>/systemprompt before the first turn).
	SystemPrompt func(ctx context.Context, s *session.Session) error
	// MCP keeps the sessions' long-lived MCP servers (s/<id>/mcp); nil:
	// t/mcp starts a server per call. The daemon ends them with the
	// sessions and at Close.
	MCP MCPServers
	// BackendState says how each backend's last request went (backends).
	BackendState func(name string) (string, time.Duration)
	// Msize is the largest 9P message offered; 0 means ninep.DefaultMsize.
	Msize uint32
	// Redact hides secrets in everything the daemon writes: the log, the
	// sessions, error replies. nil: one built from the Config.
	Redact *redact.Redactor
}

// Daemon is a running server.
type Daemon struct {
	Config   *config.Config
	NS       *ns.NS
	Server   *ninep.Server
	Sessions *session.Manager
	Batch    *batch.Registry
	Start    time.Time
	log      *log.Logger
	warmCwd  func() // see WarmCwdCheck

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]bool
	onClose   []func() // shutdown handlers, run last first
	// beforeClose run first, before listeners and connections close.
	beforeClose []func()
	closed      bool
	done        chan struct{}
}

// spareSessions is how many session directories the daemon keeps made
// ahead of their sessions (session.Options.Spares): a session made from
// one costs a rename instead of eight file creations by the end of its
// first turn.
const spareSessions = 4

// Start builds the tree and begins serving. It fails if another daemon
// holds the socket.
func Start(cfg *config.Config, o Options) (*Daemon, error) {
	if o.Redact == nil {
		o.Redact = redact.FromConfig(cfg)
	}
	d := &Daemon{Config: cfg, Start: time.Now(), log: o.Redact.Logger(o.Log), conns: map[net.Conn]bool{}, done: make(chan struct{})}
	if err := privateDir(filepath.Dir(cfg.Socket)); err != nil {
		return nil, fmt.Errorf("runtime directory: %v", err)
	}
	lk, err := lock(cfg.Socket)
	if err != nil {
		return nil, err
	}
	d.OnClose(func() { lk.Close(); os.Remove(lk.Name()) })

	var reg *batch.Registry
	if o.CheckAgent == nil {
		o.CheckAgent = agentChecker(cfg)
	}
	checkCwd, warmCwd := cwdChecker(cfg)
	d.warmCwd = warmCwd
	so := session.Options{Runner: o.Runner, CheckAgent: o.CheckAgent, CheckBackend: backendChecker(cfg), CheckCwd: checkCwd,
		Logf: d.log.Printf, OnStop: func(id string) { reg.StopChildren(id) }, TmpQuotaMB: cfg.Sandbox.TmpQuotaMB, Redact: o.Redact}
	reg, err = batch.Open(batch.Options{Dir: filepath.Join(cfg.DataDir, "b"), Session: so, MaxRunning: cfg.MaxParallel,
		TrDir: filepath.Join(cfg.DataDir, "tr"), Logf: d.log.Printf})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("batch jobs: %v", err)
	}
	d.Batch = reg
	d.OnClose(reg.Close)
	so.Dir, so.TrDir = filepath.Join(cfg.DataDir, "s"), filepath.Join(cfg.DataDir, "tr")
	so.Spares = spareSessions // a job's members are made at once: none for them
	mgr, err := session.Open(so)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("sessions: %v", err)
	}
	d.Sessions = mgr
	d.OnClose(mgr.Close)
	if o.MCP != nil {
		// Registered after mgr.Close, so run before it: the servers end
		// while their sessions' tmp still exists.
		o.MCP.Watch(mgr)
		d.OnClose(o.MCP.Close)
	}
	jobs := &jobMaker{cfg: cfg, reg: reg}
	counters := append(serverCounters(d), sessionCounters(mgr)...)
	counters = append(counters, o.Counters...)
	nsp, err := ns.Build(ns.Options{Config: cfg, Uid: userName(), Start: d.Start, Counters: counters, Redact: o.Redact, BackendState: o.BackendState,
		Sessions: &ns.Sessions{M: mgr, Models: redactModels(o.Models, o.Redact), Spawn: jobs.spawn, InUse: o.InUse, SystemPrompt: o.SystemPrompt, MCP: mcpHook(o.MCP)},
		Batch:    &ns.Batch{R: reg, New: jobs.new}, Extra: o.Extra, Logf: d.log.Printf})
	if err != nil {
		d.Close()
		return nil, err
	}
	d.NS = nsp
	d.OnClose(func() { nsp.Close() })
	d.Server = ninep.New(nsp.Root)
	d.Server.Msize = o.Msize
	d.Server.Guard, d.Server.Resolve = nsp.Guard, who.Stages.Resolve
	d.Server.Redact = o.Redact.String
	d.Server.OnError = nsp.Errors.Record

	l, err := listenUnix(cfg.Socket)
	if err != nil {
		d.Close()
		return nil, err
	}
	// No authentication: the socket is 0600 in a 0700 directory; who is
	// asking comes from the kernel (peer.go).
	d.serve(l, func(c net.Conn) { d.Server.ServeConnAs(c, c, peer(c)) })
	if cfg.Listen != "" {
		if err := d.listenTCP(cfg); err != nil { // remote.go
			d.Close()
			return nil, err
		}
	}
	if err := writePid(cfg.StateDir); err != nil {
		d.log.Printf("pid file: %v", err)
	} else {
		d.OnClose(func() { os.Remove(filepath.Join(cfg.StateDir, "ollie.pid")) })
	}
	if err := os.WriteFile(cfg.SocketFile(), []byte(cfg.Socket+"\n"), 0600); err != nil {
		d.log.Printf("socket file: %v", err)
	} else {
		d.OnClose(func() { os.Remove(cfg.SocketFile()) })
	}
	return d, nil
}

// WarmCwdCheck does ahead of time what the first check of a new
// session's cwd does once for all: resolve and watch the paths every cwd
// is kept away from. Safe to call at any time, from any goroutine.
func (d *Daemon) WarmCwdCheck() { d.warmCwd() }

// Addrs returns the addresses being served, unix socket first.
func (d *Daemon) Addrs() []net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []net.Addr
	for _, l := range d.listeners {
		out = append(out, l.Addr())
	}
	return out
}

// serve accepts connections on l and serves each with serve.
func (d *Daemon) serve(l net.Listener, serve func(net.Conn)) {
	d.mu.Lock()
	d.listeners = append(d.listeners, l)
	d.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					d.log.Printf("accept: %v", err)
				}
				return
			}
			if !d.track(c, true) {
				c.Close()
				return
			}
			go func() {
				serve(c)
				c.Close()
				d.track(c, false)
			}()
		}
	}()
}

func (d *Daemon) track(c net.Conn, add bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	if add {
		d.conns[c] = true
	} else {
		delete(d.conns, c)
	}
	return true
}

// BeforeClose registers a handler that runs at shutdown while the
// connections still serve: an in-process mount is unmounted there, so
// that requests in flight through it are answered instead of meeting a
// dead connection the bridge would try to dial again.
func (d *Daemon) BeforeClose(f func()) {
	d.mu.Lock()
	d.beforeClose = append(d.beforeClose, f)
	d.mu.Unlock()
}

// MCPServers are the sessions' long-lived MCP servers (mcplive.Registry).
type MCPServers interface {
	URL(s *session.Session, name string) (string, error)
	Watch(m *session.Manager)
	Close()
}

func mcpHook(r MCPServers) func(*session.Session, string) (string, error) {
	if r == nil {
		return nil
	}
	return r.URL
}

// OnClose registers a shutdown handler. Handlers run in reverse order of
// registration, after listeners and connections are closed.
func (d *Daemon) OnClose(f func()) {
	d.mu.Lock()
	d.onClose = append(d.onClose, f)
	d.mu.Unlock()
}

// Close stops serving and runs the shutdown handlers. It is idempotent.
func (d *Daemon) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errClosed
	}
	d.closed = true
	ls, cs, hs, first := d.listeners, d.conns, d.onClose, d.beforeClose
	d.listeners, d.conns, d.onClose, d.beforeClose = nil, nil, nil, nil
	d.mu.Unlock()
	for i := len(first) - 1; i >= 0; i-- {
		first[i]()
	}
	for _, l := range ls {
		l.Close()
	}
	for c := range cs {
		c.Close()
	}
	for i := len(hs) - 1; i >= 0; i-- {
		hs[i]()
	}
	close(d.done)
	return nil
}

// Done is closed when the daemon has shut down.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Run serves until ctx is done, then shuts down.
func (d *Daemon) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		d.Close()
	case <-d.done:
	}
	return nil
}

func userName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// serverCounters reads d.Server at read time: the server is made after the
// namespace that shows its counters.
func serverCounters(d *Daemon) []ns.Counter {
	st := func() *ninep.Stats { return &d.Server.Stats }
	return []ns.Counter{
		{Name: "9p", Doc: "9P requests served, by kind: one 'kind count' line each.", Read: func() string {
			var b strings.Builder
			for i, name := range ninep.OpNames {
				fmt.Fprintf(&b, "%s %d\n", name, st().Ops[i].Load())
			}
			return b.String()
		}},
		{Name: "bytes", Doc: "Bytes read and written through the tree.", Read: func() string {
			return fmt.Sprintf("read %d\nwritten %d\n", st().BytesRead.Load(), st().BytesWritten.Load())
		}},
		{Name: "conns", Doc: "Open 9P connections.", Read: func() string {
			return fmt.Sprintf("%d\n", st().Conns.Load())
		}},
	}
}

// redactModels cleans the error of a model listing, which may quote a
// backend's answer, before it becomes the Rerror of s/<id>/models.
func redactModels(f func(context.Context, *session.Session) ([]string, error), r *redact.Redactor) func(context.Context, *session.Session) ([]string, error) {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, s *session.Session) ([]string, error) {
		ms, err := f(ctx, s)
		return ms, r.Error(err)
	}
}
