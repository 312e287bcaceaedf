package ns

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
	"ollie.dev/ollie/internal/valid"
)

// Sessions are the hooks the s/ directory needs beyond the manager.
type Sessions struct {
	M *session.Manager
	// Models lists the models a session's backend offers; nil: none.
	Models func(ctx context.Context, s *session.Session) ([]string, error)
	// Spawn starts a batch job of sub-agents of parent from a job spec
	// (its spawn file) and returns the job id; nil: no sub-agents.
	Spawn func(parent *session.Session, spec string) (string, error)
	// InUse says which backend and model a session uses now, for idx.
	InUse func(session.Meta) (backend, model string)
	// SystemPrompt renders and records the system prompt the session's
	// next turn will send; nil: it is recorded by turns only.
	SystemPrompt func(ctx context.Context, s *session.Session) error
	// MCP is the URL of session s's long-lived MCP server name (started
	// if need be, under s's sandbox policy); nil: none (t/mcp then starts
	// a server per call).
	MCP func(s *session.Session, name string) (string, error)
}

// sessionsDir is s/: the clone file new, idx, the session scripts (from
// the config directory) and one directory per session.
type sessionsDir struct {
	mixedDir
	hooks Sessions
	// lengths is the last length a stat found of each session file with
	// a view, by qid path, for a stat that finds the session's lock taken.
	lengths sync.Map // uint64 -> int
}

// viewLength returns n, the length a view found, and remembers it; if the
// view could not look (ok false), the length found last.
func (d *sessionsDir) viewLength(path uint64, n int, ok bool) uint64 {
	if ok {
		d.lengths.Store(path, n)
		return uint64(n)
	}
	if v, found := d.lengths.Load(path); found {
		return uint64(v.(int))
	}
	return 0
}

// renderSystemPrompt records what s's next turn will send as its system
// prompt. A failure is left to that turn to report: a session may well be
// made before its backend is configured.
func (d *sessionsDir) renderSystemPrompt(ctx context.Context, s *session.Session) {
	d.hooks.renderSystemPrompt(ctx, s)
}

// renderSystemPrompt is what sessionsDir's does. A running turn sends the
// prompt it began with, and records it itself: it is left alone.
func (h *Sessions) renderSystemPrompt(ctx context.Context, s *session.Session) {
	if h.SystemPrompt != nil && !s.Summary().State.Busy() {
		h.SystemPrompt(ctx, s)
	}
}

// forget drops what s/ keeps of a session that ended.
func (d *sessionsDir) forget(id string) {
	d.mu.Lock()
	base, ok := d.qids[id]
	d.mu.Unlock()
	if ok {
		for i := range sessionTable {
			d.lengths.Delete(base + 1 + uint64(i))
		}
	}
	d.mixedDir.forget(id)
}

// sessionQids is the block of a session: its directory, its files, ask/.
var sessionQids = len(sessionTable) + 2

// SessionKeys are the keys s/new accepts.
var SessionKeys = []string{"cwd", "name", "agent", "backend", "model"}

func newSessionsDir(fs *tree.FS, h Sessions, scripts *tree.DiskDir) *sessionsDir {
	d := &sessionsDir{mixedDir: newMixedDir(fs, "s", scripts, sessionQids), hooks: h}
	clone := fs.NewSynth("new", 0666, d.openNew)
	clone.Length = func() int64 { return int64(len(newTemplate)) } // what a fresh fid reads
	d.fixed = []tree.Entry{
		{Name: "new", Mode: "rw", Doc: "Clone file: write key=value settings (cwd required; name agent backend model), read the id back on the same fid.",
			Node: clone},
		{Name: "idx", Mode: "r", Doc: "One line per session: id state agent backend model cwd name (tab-separated; backend and model as in use).",
			Node: fs.Text("idx", d.renderIdx)},
	}
	return d
}

func (d *sessionsDir) Walk(name string) (tree.Node, error) {
	if n, ok := d.walkFixed(name); ok {
		return n, nil
	}
	if s, ok := d.hooks.M.Get(name); ok {
		return d.sessionNode(s, name), nil
	}
	return d.walkScript(name)
}

func (d *sessionsDir) sessionNode(s *session.Session, name string) *sessionDir {
	return &sessionDir{parent: d, s: s, base: d.qidBlock(s.ID()), name: name}
}

func (d *sessionsDir) List() ([]plan9.Dir, error) {
	out := d.listFixed()
	for _, s := range d.hooks.M.List() {
		name := s.Summary().Meta.Name
		if name == "" {
			name = s.ID()
		}
		st, _ := d.sessionNode(s, name).Stat()
		out = append(out, st)
	}
	return out, nil
}

// Help documents s/ and, under <id>/, the files of every session.
func (d *sessionsDir) Help() []tree.HelpRow {
	var rows []tree.HelpRow
	for _, e := range d.fixed {
		rows = append(rows, tree.HelpRow{Path: e.Name, Mode: e.Mode, Doc: e.Doc})
	}
	rows = append(rows, tree.HelpRow{Path: "<id>/", Mode: "dir", Doc: "A session (its name works too). rm -r ends it (transcript to tr/); mv renames it."})
	for _, f := range sessionTable {
		rows = append(rows, tree.HelpRow{Path: "<id>/" + f.name, Mode: f.mode, Doc: f.doc})
	}
	return append(rows, tree.HelpRow{Path: "<id>/ask/", Mode: "rw", Doc: "Pending consent requests (elevated execute_code stages): read one to see it, write allow or deny."})
}

func (d *sessionsDir) renderIdx() ([]byte, error) {
	var b strings.Builder
	for _, s := range d.hooks.M.List() {
		// The summary, not Meta and State: those take the session's
		// lock, which a Submit holds across an fsync.
		sum := s.Summary()
		m := sum.Meta
		be, model := m.Backend, m.Model
		if d.hooks.InUse != nil {
			be, model = d.hooks.InUse(m)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID(), sum.State, m.Agent, dash(be), dash(model), m.Cwd, dash(m.Name))
	}
	return []byte(b.String()), nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// openNew opens s/new: the settings written are one message, and the
// session is made at its commit (close, fsync, or a read of the same fid,
// which then returns the id); before any write a read returns a template.
func (d *sessionsDir) openNew(ctx context.Context, mode uint8) (tree.Handle, error) {
	return newClone(newSessionMsg, newTemplate, func(text string) (string, error) {
		if err := valid.String("s/new", text); err != nil {
			return "", err
		}
		kv, err := parseKV(text, SessionKeys)
		if err != nil {
			return "", err
		}
		s, err := d.hooks.M.New(session.Spec{Cwd: kv["cwd"], Name: kv["name"], Agent: kv["agent"], Backend: kv["backend"], Model: kv["model"]})
		if err != nil {
			return "", err
		}
		d.renderSystemPrompt(context.Background(), s) // the open's context may be over by the commit
		return s.ID(), nil
	}), nil
}

// newTemplate is what a read of a fresh fid of s/new returns.
const newTemplate = "cwd=\nname=\nagent=\nbackend=\nmodel=\n"

// newSessionMsg frames the settings written to s/new: each line is checked
// as it arrives.
var newSessionMsg = &msgSpec{what: "session settings", max: 64 << 10,
	lines: checkNewSession}

// checkNewSession checks the complete lines written to s/new so far: text
// without NUL (the framing checks UTF-8), known keys.
func checkNewSession(done string) error {
	if err := valid.String("s/new", done); err != nil {
		return err
	}
	_, err := parseKV(done, SessionKeys)
	return err
}
