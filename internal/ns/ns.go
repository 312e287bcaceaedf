// Package ns builds the ollie namespace: the root table of the tree, the
// on-disk directories with their policies, and the synthesized files
// (help, backends, t/idx, sk/idx, stats/). Sessions and batch jobs plug in
// as extra root entries.
//
//	help backends         generated
//	a/ p/ sk/ t/ u/ x/    $XDG_CONFIG_HOME/ollie/...
//	m/ tr/ tmp/           $XDG_DATA_HOME/ollie/...
//	s/ b/                 sessions, batch jobs (Options.Extra)
//	stats/                counters
package ns

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/defaults"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/index"
	"ollie.dev/ollie/internal/redact"
	"ollie.dev/ollie/internal/tree"
)

// Options configure Build.
type Options struct {
	Config *config.Config
	Uid    string    // owner shown in stats
	Start  time.Time // daemon start, for uptime and static mtimes
	// Counters are extra stats/ files (sessions, turns, 9P ops ...).
	Counters []Counter
	// Sessions, if set, is served as s/.
	Sessions *Sessions
	// Batch, if set, is served as b/.
	Batch *Batch
	// Extra root entries (b/ ...) provided by other layers.
	Extra []tree.Entry
	// BackendState, if set, says whether a backend answered its last
	// request ("ok", "failed", "-") and how long ago, for backends.
	BackendState func(name string) (string, time.Duration)
	// Redact hides configured keys that a base URL may hold.
	Redact *redact.Redactor
	// Logf, if set, receives each error kept in the errors file.
	Logf func(string, ...any)
}

// Counter is one file of stats/.
type Counter struct {
	Name string
	Doc  string
	Read func() string
}

// NS is a built namespace.
type NS struct {
	Root  *tree.StaticDir
	FS    *tree.FS
	Guard tree.Guard // what a stage may do (stage.go)
	// Errors is the errors file's log: the 9P server records the errors
	// of its requests there (ninep.Server.OnError = Errors.Record).
	Errors *ErrorLog
	roots  []*os.Root
	done   chan struct{} // closed by Close: ends the prompt refresher
}

// Close releases the directory handles.
func (n *NS) Close() error {
	for _, r := range n.roots {
		r.Close()
	}
	select {
	case <-n.done:
	default:
		close(n.done)
	}
	return nil
}

// promptRefresher returns what a/, sk/ and t/ call after a change: the
// system prompts of all sessions are rendered again, so that the stat of
// systemprompt is true after the change too (its open renders anyway). It
// runs in the background, one pass at a time; changes during a pass make
// one more. nil when sessions render no prompt of their own.
func (n *NS) promptRefresher(h *Sessions) func() {
	if h == nil || h.SystemPrompt == nil {
		return nil
	}
	kick := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-n.done:
				return
			case <-kick:
			}
			for _, s := range h.M.List() {
				h.renderSystemPrompt(context.Background(), s)
			}
		}
	}()
	return func() {
		select {
		case kick <- struct{}{}:
		default: // a pass is due already
		}
	}
}

// diskDirs says where each on-disk directory lives and what it allows.
var diskDirs = []struct {
	name, mode, doc string
	data            bool // under DataDir, not ConfigDir
	pol             tree.DiskPolicy
}{
	{"a", "rw", "Agent configurations, NAME.json. Invalid JSON, unknown keys, and a backend, sandbox profile or p/ part that does not exist fail the write.", false,
		tree.DiskPolicy{Create: true, Write: true, Remove: true, Rename: true, Sync: true, Atomic: true}}, // Validate: agentRefs.validAgent
	{"p", "r", "Prompt parts, composed into system prompts as agent configurations list them. Edit them on disk.", false,
		tree.DiskPolicy{}},
	{"sk", "rw", "Skills, NAME.md: markdown with front matter (description; name, if given, is NAME).", false,
		tree.DiskPolicy{Create: true, Write: true, Remove: true, Rename: true, Sync: true, Atomic: true, Validate: validSkill}},
	{"t", "rw, exec", "Tool scripts; a header comment gives description: and args:.", false,
		tree.DiskPolicy{Create: true, Mkdir: true, Write: true, Remove: true, Rename: true, Exec: true, Sync: true, Atomic: true}},
	{"u", "r, exec", "Utility scripts composed from the primitives here (u/optimize ...).", false,
		tree.DiskPolicy{Exec: true}},
	{"x", "r, exec", "Plugins: executables of yours for hooks to call (none ship; the daemon runs none by itself).", false,
		tree.DiskPolicy{Exec: true}},
	{"m", "rw", "Memory notes; persistent, outside any session.", true,
		tree.DiskPolicy{Create: true, Mkdir: true, Write: true, Remove: true, Rename: true, Sync: true, Atomic: true}},
	{"tr", "r, rm", "Transcripts of ended sessions.", true,
		tree.DiskPolicy{Remove: true}},
	{"tmp", "rw", "Scratch space shared by sessions; never wiped behind your back.", true,
		tree.DiskPolicy{Create: true, Mkdir: true, Write: true, Remove: true, Rename: true}},
}

// Build creates the directories (installing shipped defaults without
// overwriting edits) and assembles the root table.
func Build(o Options) (*NS, error) {
	c := o.Config
	for _, d := range []string{c.ConfigDir, c.DataDir} {
		if err := os.MkdirAll(d, 0700); err != nil {
			return nil, fmt.Errorf("make %s: %v", d, err)
		}
	}
	if _, err := defaults.Install(c.ConfigDir, "a", "p", "sk", "t", "u", "x", "s", "b"); err != nil {
		return nil, fmt.Errorf("install defaults in %s: %v", c.ConfigDir, err)
	}
	fs := &tree.FS{Qids: tree.NewQids(), Uid: o.Uid, Mtime: uint32(o.Start.Unix())}
	n := &NS{FS: fs, done: make(chan struct{})}
	refresh := n.promptRefresher(o.Sessions)
	root := fs.NewRoot(0555)
	// The tables are complete once Build returns, so help is rendered at
	// the first read and kept: rendering it is most of the cost of a cat.
	help := sync.OnceValue(func() []byte { return renderHelp(root) })
	root.Add(tree.Entry{Name: "help", Mode: "r", Doc: "How to use the tree (this file), generated from the tables that define it.",
		Node: fs.Text("help", func() ([]byte, error) { return help(), nil })})
	n.Errors = NewErrorLog(o.Logf, secretValues(c))
	if o.Redact != nil {
		n.Errors.clean = o.Redact.String // the daemon's one redactor, as for Rerrors
	}
	root.Add(tree.Entry{Name: "errors", Mode: "r", Doc: errorsDoc, Node: n.errorsFile()})
	root.Add(tree.Entry{Name: "backends", Mode: "r", Doc: "One line per backend: name kind base-url default-model last, where last is ok(AGE ago) or failed(AGE ago) for its last request, - if none yet (never keys: no userinfo or secret query parameters).",
		Node: fs.Text("backends", func() ([]byte, error) { return renderBackends(c.Backends, o.Redact, o.BackendState), nil })})
	refs := &agentRefs{cfg: c}
	for _, d := range diskDirs {
		base := c.ConfigDir
		if d.data {
			base = c.DataDir
		}
		dir := filepath.Join(base, d.name)
		if err := os.MkdirAll(dir, 0700); err != nil {
			n.Close()
			return nil, fmt.Errorf("make %s: %v", dir, err)
		}
		r, err := os.OpenRoot(dir)
		if err != nil {
			n.Close()
			return nil, err
		}
		n.roots = append(n.roots, r)
		pol := d.pol
		switch d.name {
		case "a", "sk", "t":
			pol.Changed = refresh
		}
		switch d.name {
		case "a":
			pol.Validate = refs.validAgent
		case "p":
			refs.parts = r
		case "t":
			pol.Synth = []tree.Entry{{Name: "idx", Mode: "r", Doc: "One line per tool: name: description; args: ...",
				Node: fs.Text("idx", func() ([]byte, error) { return index.Tools(r), nil })}}
		case "sk":
			pol.Synth = []tree.Entry{{Name: "idx", Mode: "r", Doc: "One line per skill: name: description",
				Node: fs.Text("idx", func() ([]byte, error) { return index.Skills(r), nil })}}
		}
		root.Add(tree.Entry{Name: d.name, Mode: d.mode, Doc: d.doc, Node: fs.NewDiskDir(d.name, r, &pol)})
	}
	if o.Sessions != nil {
		sdir := filepath.Join(c.ConfigDir, "s")
		if err := os.MkdirAll(sdir, 0700); err != nil {
			n.Close()
			return nil, err
		}
		r, err := os.OpenRoot(sdir)
		if err != nil {
			n.Close()
			return nil, err
		}
		n.roots = append(n.roots, r)
		scripts := fs.NewDiskDir("s", r, &tree.DiskPolicy{Exec: true})
		root.Add(tree.Entry{Name: "s", Mode: "dir", Doc: "Sessions, and the session scripts (sh b bfg bbg ls kill cleanup).",
			Node: newSessionsDir(fs, *o.Sessions, scripts)})
	}
	if o.Batch != nil {
		scripts, err := n.scriptDir(filepath.Join(c.ConfigDir, "b"), "b")
		if err != nil {
			n.Close()
			return nil, err
		}
		bh := *o.Batch
		if bh.Spawn == nil && o.Sessions != nil {
			bh.Spawn = o.Sessions.Spawn
		}
		root.Add(tree.Entry{Name: "b", Mode: "dir", Doc: "Batch jobs: fork-join of ephemeral sessions.",
			Node: newBatchDir(fs, bh, scripts)})
	}
	for _, e := range o.Extra {
		root.Add(e)
	}
	root.Add(tree.Entry{Name: "stats", Mode: "r", Doc: "Daemon counters, one file each.", Node: statsDir(fs, o)})
	n.Root = root
	n.Guard = newStageGuard(root)
	return n, nil
}

// scriptDir serves the scripts shipped for a directory of the tree (b/q)
// from the configuration directory, read-only and executable.
func (n *NS) scriptDir(dir, name string) (*tree.DiskDir, error) {
	if err := os.MkdirAll(dir, 0700); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	n.roots = append(n.roots, r)
	return n.FS.NewDiskDir(name, r, &tree.DiskPolicy{Exec: true}), nil
}

// renderBackends shows each base URL without its userinfo and secret
// query parameters, and without any configured key it may still hold.
func renderBackends(bs []config.Backend, r *redact.Redactor, state func(string) (string, time.Duration)) []byte {
	var b strings.Builder
	for _, be := range bs {
		model := be.Model
		if model == "" {
			model = "-"
		}
		base := be.BaseURL
		if base != "" {
			base = r.String(redact.URL(base))
		}
		last := "-"
		if state != nil {
			st, ago := state(be.Name)
			if st != "-" {
				last = fmt.Sprintf("%s(%s ago)", st, ago.Round(time.Second))
			}
		}
		fmt.Fprintf(&b, "%s %s %s %s %s\n", be.Name, be.Kind, orDash(base), model, last)
	}
	return []byte(b.String())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func statsDir(fs *tree.FS, o Options) *tree.StaticDir {
	d := fs.NewDir("stats", 0555)
	d.Add(tree.Entry{Name: "uptime", Mode: "r", Doc: "Seconds since the daemon started.",
		Node: fs.Text("uptime", func() ([]byte, error) {
			return fmt.Appendf(nil, "%d\n", int(time.Since(o.Start).Seconds())), nil
		})})
	for _, c := range o.Counters {
		c := c
		d.Add(tree.Entry{Name: c.Name, Mode: "r", Doc: c.Doc,
			Node: fs.Text(c.Name, func() ([]byte, error) { return []byte(c.Read()), nil })})
	}
	return d
}

var _ tree.Dir = (*tree.StaticDir)(nil)
var _ = plan9.DMDIR
