package ns

import (
	"context"
	"strings"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/batch"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
)

// Batch are the hooks b/ needs.
type Batch struct {
	R *batch.Registry
	// New starts a job from a spec written to b/new (parent "") or to a
	// session's spawn file; it applies the parent's policy and caps.
	New func(sp batch.Spec, parent *session.Session) (*batch.Job, error)
	// Spawn serves the spawn files of the jobs' members (nested
	// sub-agents), as Sessions.Spawn does those of s/.
	Spawn func(parent *session.Session, spec string) (string, error)
}

// batchDir is b/: the clone file new, the script q (from the config
// directory), and one directory per job.
type batchDir struct {
	mixedDir
	hooks   Batch
	members map[string]*sessionsDir // per job: its members seen as sessions; under mu
}

func newBatchDir(fs *tree.FS, h Batch, scripts *tree.DiskDir) *batchDir {
	d := &batchDir{mixedDir: newMixedDir(fs, "b", scripts, 4), hooks: h, members: map[string]*sessionsDir{}}
	d.fixed = []tree.Entry{{Name: "new", Mode: "rw",
		Doc:  "Clone file: write key=value settings (agent model backend cwd parallel=N), a line ---, the prompt; read the job id back.",
		Node: fs.NewSynth("new", 0666, func(ctx context.Context, mode uint8) (tree.Handle, error) { return d.cloneHandle(nil), nil })}}
	return d
}

// cloneHandle makes a job from a spec; parent is the spawning session.
func (d *batchDir) cloneHandle(parent *session.Session) *cloneFile {
	return newJobClone(func(text string) (string, error) {
		sp, err := batch.ParseSpec(text, ParseJobKV)
		if err != nil {
			return "", err
		}
		j, err := d.hooks.New(sp, parent)
		if err != nil {
			return "", err
		}
		return j.ID(), nil
	})
}

func (d *batchDir) Walk(name string) (tree.Node, error) {
	if n, ok := d.walkFixed(name); ok {
		return n, nil
	}
	if j, ok := d.hooks.R.Get(name); ok {
		return d.jobNode(j), nil
	}
	return d.walkScript(name)
}

func (d *batchDir) jobNode(j *batch.Job) *jobDir {
	return &jobDir{b: d, j: j, base: d.qidBlock(j.ID())}
}

func (d *batchDir) List() ([]plan9.Dir, error) {
	out := d.listFixed()
	for _, j := range d.hooks.R.List() {
		st, _ := d.jobNode(j).Stat()
		out = append(out, st)
	}
	return out, nil
}

func (d *batchDir) Help() []tree.HelpRow {
	return []tree.HelpRow{
		{Path: "new", Mode: "rw", Doc: d.fixed[0].Doc},
		{Path: "q", Mode: "r, exec", Doc: "Script: a one-shot query from arguments and/or stdin; prints only the answer."},
		{Path: "<id>/state", Mode: "r", Doc: "running, done or failed."},
		{Path: "<id>/result", Mode: "r", Doc: "Blocks until every member is done; their replies in submission order, each after a line === K/N ===."},
		{Path: "<id>/ctl", Mode: "w", Doc: "stop: stop every member."},
		{Path: "<id>/<k>/", Mode: "dir", Doc: "The k-th member session's files (chat, usage, ...); rm -r b/<id> removes the job."},
	}
}

// jobDir is b/<id>/.
type jobDir struct {
	b    *batchDir
	j    *batch.Job
	base uint64
}

func (d *jobDir) Stat() (plan9.Dir, error) { return dirStat(d.b.fs, d.base, d.j.ID(), 0755), nil }

func (d *jobDir) files() []tree.Entry {
	fs, j := d.b.fs, d.j
	state := &fixedQid{Synth: fs.Text("state", func() ([]byte, error) { return []byte(j.State() + "\n"), nil }), path: d.base + 1}
	result := &fixedQid{Synth: fs.NewSynth("result", 0444, func(ctx context.Context, mode uint8) (tree.Handle, error) {
		return &answerHandle{ask: func(ctx context.Context) ([]byte, error) {
			if err := j.Wait(ctx.Done()); err != nil {
				return nil, err
			}
			return j.Result(), nil
		}}, nil
	}), path: d.base + 2}
	ctl := &fixedQid{Synth: fs.Ctl("ctl", func(ctx context.Context, cmd []byte) error {
		if strings.TrimSpace(string(cmd)) != "stop" {
			return errs.E(errs.Invalid, "unknown control message "+quoteShort(strings.TrimSpace(string(cmd)))+" (want stop)")
		}
		d.b.hooks.R.Stop(j.ID())
		return nil
	}), path: d.base + 3}
	return []tree.Entry{{Name: "state", Node: state}, {Name: "result", Node: result}, {Name: "ctl", Node: ctl}}
}

func (d *jobDir) Walk(name string) (tree.Node, error) {
	for _, e := range d.files() {
		if e.Name == name {
			return e.Node, nil
		}
	}
	if s, ok := d.j.Manager().Get(name); ok {
		return d.memberDir(s), nil
	}
	return nil, errs.E(errs.NotExist, name)
}

func (d *jobDir) memberDir(s *session.Session) *memberDir {
	return &memberDir{d.sessions().sessionNode(s, s.Name())}
}

// memberDir is b/<id>/<k>/: a session's files, but the member lives and
// ends with its job. rm -r b/<id> removes the members' files and
// directories before the job's; those removals do nothing.
type memberDir struct{ *sessionDir }

func (d *memberDir) Remove(ctx context.Context) error { return nil }

// sessions is a view of the job's members as a sessions directory, so a
// member's files are exactly a session's.
func (d *jobDir) sessions() *sessionsDir {
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	v := d.b.members[d.j.ID()]
	if v == nil {
		v = &sessionsDir{mixedDir: mixedDir{fs: d.b.fs, block: sessionQids, qids: map[string]uint64{}}, hooks: Sessions{M: d.j.Manager(), Spawn: d.b.hooks.Spawn}}
		d.b.members[d.j.ID()] = v
	}
	return v
}

func (d *jobDir) List() ([]plan9.Dir, error) {
	var out []plan9.Dir
	for _, e := range d.files() {
		st, _ := e.Node.Stat()
		out = append(out, st)
	}
	for _, s := range d.j.Members() {
		st, _ := d.memberDir(s).Stat()
		out = append(out, st)
	}
	return out, nil
}

// Remove removes the job (rm -r b/<id>).
func (d *jobDir) Remove(ctx context.Context) error {
	if err := d.b.hooks.R.Remove(d.j.ID()); err != nil {
		return err
	}
	d.b.forget(d.j.ID())
	d.b.mu.Lock()
	delete(d.b.members, d.j.ID())
	d.b.mu.Unlock()
	return nil
}

// fixedQid gives a synthetic file of a job a qid from the job's block.
type fixedQid struct {
	*tree.Synth
	path uint64
}

// Remove does nothing: the job's files go with it (rm -r b/<id>).
func (f *fixedQid) Remove(ctx context.Context) error { return nil }

func (f *fixedQid) Stat() (plan9.Dir, error) {
	st, err := f.Synth.Stat()
	st.Qid.Path = f.path
	return st, err
}

// ParseJobKV parses the settings part of a job spec.
func ParseJobKV(head string) (map[string]string, error) { return parseKV(head, batch.SpecKeys) }
