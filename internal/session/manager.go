package session

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/redact"
)

// Options configure a Manager.
type Options struct {
	Dir   string // where session directories live (DataDir/s)
	TrDir string // where transcripts go (DataDir/tr)
	// TreeDir is where the tree shows these sessions, relative to its
	// root: "s" (the default), or "b/<job>" for a job's members, which
	// appear there by name.
	TreeDir string
	// Runner runs turns; nil makes every turn fail with a clear error.
	Runner Runner
	// DefaultAgent is the agent of a session that names none
	// (DefaultAgent if empty).
	DefaultAgent string
	// CheckAgent and CheckBackend validate names given in new or cfg.
	CheckAgent   func(name string) error
	CheckBackend func(name string) error
	// CheckCwd, if set, refuses working directories a session may not
	// have (sandbox.CheckSessionDir), beyond being an existing directory.
	CheckCwd func(dir string) error
	// OnStop is called when a session is stopped or killed (to stop the
	// sub-agents it spawned).
	OnStop func(id string)
	Logf   func(format string, args ...any)
	// TmpQuotaMB is the size of each session's tmp (a tmpfs where the
	// daemon may mount one); 0 for none.
	TmpQuotaMB int
	// Spares is how many session directories to keep made ahead (see
	// spare.go); 0 for none.
	Spares int
	// Redact cleans every text a session writes (chat, history, events,
	// errors, reply, system prompt, transcripts); the history loses the
	// configured keys only (see redact.Keys). nil still hides credential
	// headers, but knows no configured key.
	Redact *redact.Redactor
}

// Manager holds every session of the daemon.
type Manager struct {
	o      Options
	runner Runner

	turns     atomic.Int64
	toolCalls atomic.Int64
	closing   atomic.Bool // no new turns start

	// open are the sessions whose logs are kept open (see logs).
	open *lru[*Session]

	mu     sync.Mutex
	byID   map[string]*Session
	byName map[string]*Session
	notify notifier // sessions added, removed or renamed

	spare spares
}

// DefaultAgent is the agent of a session that names none, unless
// Options say otherwise.
const DefaultAgent = "default"

// Open loads the sessions in o.Dir. A turn that a crash cut short is
// marked in its chat and waits for `ctl resume`; it is never re-run by
// itself.
func Open(o Options) (*Manager, error) {
	if o.DefaultAgent == "" {
		o.DefaultAgent = DefaultAgent
	}
	if err := os.MkdirAll(o.Dir, 0700); err != nil {
		return nil, err
	}
	m := &Manager{o: o, runner: o.Runner, open: newLRU[*Session](maxOpenLogs), byID: map[string]*Session{}, byName: map[string]*Session{}, notify: newNotifier()}
	ents, err := os.ReadDir(o.Dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		s, err := m.load(e.Name())
		if err != nil {
			m.logf("session %s not loaded: %v", e.Name(), err)
			continue
		}
		m.byID[s.id] = s
		if s.meta.Name != "" {
			m.byName[s.meta.Name] = s
		}
	}
	m.openSpares(ents)
	return m, nil
}

// clean redacts b before it is written to the log or transcript name: the
// history (context.jsonl, a .jsonl transcript) loses the configured keys,
// everything else the credential patterns too.
func (m *Manager) clean(name string, b []byte) []byte {
	if strings.HasSuffix(name, ".jsonl") && name != "events.jsonl" {
		return m.o.Redact.KeysBytes(b)
	}
	return m.o.Redact.Bytes(b)
}

func (m *Manager) logf(format string, args ...any) {
	if m.o.Logf != nil {
		m.o.Logf(format, args...)
	}
}

// Spec describes a new session.
type Spec struct {
	Cwd, Name, Agent, Backend, Model string
	Params                           Params
	Parent, Sandbox                  string
}

// New creates a session. Its directory is on disk when New returns.
func (m *Manager) New(sp Spec) (*Session, error) {
	if err := m.checkSpec(&sp); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if sp.Name != "" && (m.byName[sp.Name] != nil || m.byID[sp.Name] != nil) {
		return nil, errs.E(errs.Exist, "a session is already called "+sp.Name)
	}
	// An id is random within its second: one taken (here, or on disk by
	// a session not loaded) is drawn again. tmp/ is made by the first
	// tool call that needs it (EnsureTmp), unless the session has a
	// spare's.
	meta := Meta{Name: sp.Name, Agent: sp.Agent, Backend: sp.Backend, Model: sp.Model,
		Cwd: sp.Cwd, Created: time.Now().UTC(), Params: sp.Params, Parent: sp.Parent, Sandbox: sp.Sandbox}
	var id, dir string
	for {
		id = NewID()
		dir = filepath.Join(m.o.Dir, id)
		if m.byID[id] != nil {
			continue
		}
		meta.ID = id
		b, _ := json.MarshalIndent(meta, "", "\t")
		err := m.makeDir(dir, append(b, '\n'))
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
	}
	s := newSession(m, dir, id)
	s.meta, s.unsynced = meta, true
	s.publishLocked() // s is not shared yet
	m.byID[id] = s
	if sp.Name != "" {
		m.byName[sp.Name] = s
	}
	m.notify.broadcast()
	return s, nil
}

// makeDir makes a new session's directory dir, holding meta.json, from a
// spare if there is one. An id taken on disk is os.ErrExist. Not
// fsync'd: creating a session acknowledges nothing a crash of the machine
// could lose; its first prompt makes the directory durable.
func (m *Manager) makeDir(dir string, meta []byte) error {
	if d, ok := m.takeSpare(); ok {
		err := adopt(d, dir, meta)
		if err == nil {
			return nil
		}
		if errors.Is(err, os.ErrExist) {
			m.returnSpare(d)
			return err
		}
		m.dropSpare(d, err)
	}
	if err := os.Mkdir(dir, 0700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0600); err != nil {
		os.RemoveAll(dir)
		return err
	}
	return nil
}

func (m *Manager) checkSpec(sp *Spec) error {
	if sp.Agent == "" {
		sp.Agent = m.o.DefaultAgent
	}
	if sp.Cwd == "" {
		return errs.E(errs.Invalid, "cwd is required (cwd=/some/dir)")
	}
	if err := m.checkCwd(sp.Cwd); err != nil {
		return err
	}
	if sp.Name != "" {
		if err := CheckName(sp.Name); err != nil {
			return err
		}
	}
	if m.o.CheckAgent != nil {
		if err := m.o.CheckAgent(sp.Agent); err != nil {
			return err
		}
	}
	if sp.Backend != "" && m.o.CheckBackend != nil {
		if err := m.o.CheckBackend(sp.Backend); err != nil {
			return err
		}
	}
	return checkModel(sp.Model)
}

// Get finds a session by id or by name.
func (m *Manager) Get(key string) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.byID[key]; s != nil {
		return s, true
	}
	if s := m.byName[key]; s != nil {
		return s, true
	}
	return m.byPrefixLocked(key)
}

// minPrefix is the shortest id prefix that names a session: shorter ones
// would mostly be the seconds of a day, shared by many.
const minPrefix = 4

// byPrefixLocked finds the one session whose id starts with key. It is a
// scan: a walk by prefix is a person's typing, not a program's loop.
func (m *Manager) byPrefixLocked(key string) (*Session, bool) {
	if len(key) < minPrefix {
		return nil, false
	}
	var found *Session
	for id, s := range m.byID {
		if strings.HasPrefix(id, key) {
			if found != nil {
				return nil, false // ambiguous
			}
			found = s
		}
	}
	return found, found != nil
}

// List returns every session, oldest first.
func (m *Manager) List() []*Session {
	m.mu.Lock()
	out := make([]*Session, 0, len(m.byID))
	for _, s := range m.byID {
		out = append(out, s)
	}
	m.mu.Unlock()
	// By creation: ids sort by the second only.
	sort.Slice(out, func(i, j int) bool {
		ci, cj := out[i].Summary().Meta.Created, out[j].Summary().Meta.Created
		if !ci.Equal(cj) {
			return ci.Before(cj)
		}
		return out[i].id < out[j].id
	})
	return out
}

// Len returns the number of sessions.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}

// Rename gives a session a new name; refused while a turn runs.
func (m *Manager) Rename(key, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.byID[key]
	if s == nil {
		s = m.byName[key]
	}
	if s == nil {
		return errs.E(errs.NotExist, "no session "+key)
	}
	if o := m.byName[name]; o != nil && o != s || m.byID[name] != nil {
		return errs.E(errs.Exist, "a session is already called "+name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return errs.E(errs.Busy, "cannot rename a session while a turn runs")
	}
	meta := s.meta
	meta.Name = name
	if err := writeJSON(filepath.Join(s.dir, "meta.json"), meta); err != nil {
		return err
	}
	delete(m.byName, s.meta.Name)
	s.meta = meta
	s.metaVers++
	s.publishLocked()
	m.byName[name] = s
	m.notify.broadcast()
	return nil
}

// Remove ends a session: its turn is stopped, its transcript saved to
// tr/, and its directory deleted.
func (m *Manager) Remove(key string) error {
	s, ok := m.Get(key)
	if !ok {
		return errs.E(errs.NotExist, "no session "+key)
	}
	if err := s.Kill(); err != nil {
		return err
	}
	if err := s.SaveTranscript(); err != nil {
		return errs.E(errs.Other, "save transcript", err)
	}
	m.mu.Lock()
	s.mu.Lock()
	s.removed.Store(true)
	s.logs.close()
	m.open.remove(s)
	s.notify.broadcast()
	s.mu.Unlock()
	delete(m.byID, s.id)
	if n := s.meta.Name; n != "" && m.byName[n] == s {
		delete(m.byName, n)
	}
	m.notify.broadcast()
	m.mu.Unlock()
	s.ReleaseTmp()
	return os.RemoveAll(s.dir)
}

// SaveTranscript copies the chat and the history to tr/ as
// <id>[-<name>].chat and .jsonl.
func (s *Session) SaveTranscript() error {
	tr := s.m.o.TrDir
	if tr == "" {
		return errors.New("no transcript directory configured")
	}
	return s.SaveTranscriptTo(tr, s.Name())
}

// SaveTranscriptTo copies the chat and the history into dir as
// <id>-<label>.chat and .jsonl (a batch member's label names its job).
func (s *Session) SaveTranscriptTo(dir, label string) error {
	tr := dir
	if err := os.MkdirAll(tr, 0700); err != nil {
		return err
	}
	base := s.id
	if label != s.id && label != "" {
		base += "-" + label
	}
	for src, ext := range map[string]string{s.ChatPath(): ".chat", s.ContextPath(): ".jsonl"} {
		b, err := os.ReadFile(src)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := writeAtomic(filepath.Join(tr, base+ext), s.m.clean(ext, b), 0600); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every running turn; queued prompts stay queued on disk.
// Each session's tmpfs (see quotaTmp) is unmounted: it holds memory, and
// tmp is scratch space that lasts as long as the daemon.
func (m *Manager) Close() {
	m.closing.Store(true)
	m.closeSpares()
	for _, s := range m.List() {
		s.mu.Lock()
		tr := s.turn
		s.mu.Unlock()
		if tr != nil {
			tr.cancel(errStopped)
			<-tr.done
		}
		s.ReleaseTmp()
	}
}

// Changed is closed when a session is added, removed or renamed.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.notify.wait()
}

// maxOpenLogs caps the sessions that keep their logs open (3 or 4 file
// descriptors each).
const maxOpenLogs = 128

// touch marks s as using its open logs and closes those of the session
// used least recently when too many are open. s.mu is held.
func (m *Manager) touch(s *Session) {
	if evict, ok := m.open.touch(s); ok {
		go evict.closeIdleLogs() // takes evict.mu: not while holding s.mu
	}
}

// Turns is the number of turns started since Open.
func (m *Manager) Turns() int64 { return m.turns.Load() }

// ToolCalls is the number of tool calls reported since Open.
func (m *Manager) ToolCalls() int64 { return m.toolCalls.Load() }
