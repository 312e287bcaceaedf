package ns

import (
	"context"
	"log"
	"strings"
	"sync"

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
}

// batchDir is b/: the clone file new, the script q (from the config
// directory), and one directory per job.
type batchDir struct {
	fs      *tree.FS
	hooks   Batch
	path    uint64
	fixed   []tree.Entry
	scripts *tree.DiskDir

	mu      sync.Mutex
	qids    map[string]uint64
	members map[string]*sessionsDir // per job: its members seen as sessions
}

func newBatchDir(fs *tree.FS, h Batch, scripts *tree.DiskDir) *batchDir {
	d := &batchDir{fs: fs, hooks: h, path: fs.Qids.Next(), scripts: scripts, qids: map[string]uint64{}, members: map[string]*sessionsDir{}}
	d.fixed = []tree.Entry{{Name: "new", Mode: "rw",
		Doc:  "Clone file: write key=value settings (agent model backend cwd parallel=N), a line ---, the prompt; read the job id back.",
		Node: fs.NewSynth("new", 0666, func(ctx context.Context, mode uint8) (tree.Handle, error) { return d.cloneHandle(nil), nil })}}
	return d
}

// cloneHandle makes a job from a spec; parent is the spawning session.
func (d *batchDir) cloneHandle(parent *session.Session) *jobClone {
	return &jobClone{make: func(text string) (string, error) {
		sp, err := batch.ParseSpec(text, func(h string) (map[string]string, error) { return parseKV(h, batch.SpecKeys) })
		if err != nil {
			return "", err
		}
		j, err := d.hooks.New(sp, parent)
		if err != nil {
			return "", err
		}
		return j.ID(), nil
	}}
}

func (d *batchDir) Stat() (plan9.Dir, error) {
	return dirStat(d.fs, d.path, "b", 0755), nil
}

func dirStat(fs *tree.FS, path uint64, name string, perm plan9.Perm) plan9.Dir {
	return plan9.Dir{Qid: plan9.Qid{Path: path, Type: plan9.QTDIR}, Mode: plan9.DMDIR | perm, Name: name,
		Uid: fs.Uid, Gid: fs.Uid, Muid: fs.Uid, Mtime: fs.Mtime, Atime: fs.Mtime}
}

func (d *batchDir) Walk(name string) (tree.Node, error) {
	for _, e := range d.fixed {
		if e.Name == name {
			return e.Node, nil
		}
	}
	if j, ok := d.hooks.R.Get(name); ok {
		return d.jobNode(j), nil
	}
	if d.scripts != nil {
		return d.scripts.Walk(name)
	}
	return nil, errs.E(errs.NotExist, name)
}

func (d *batchDir) jobNode(j *batch.Job) *jobDir {
	d.mu.Lock()
	base, ok := d.qids[j.ID()]
	if !ok {
		base = d.fs.Qids.Block(4)
		d.qids[j.ID()] = base
	}
	d.mu.Unlock()
	return &jobDir{b: d, j: j, base: base}
}

func (d *batchDir) List() ([]plan9.Dir, error) {
	var out []plan9.Dir
	for _, e := range d.fixed {
		st, _ := e.Node.Stat()
		out = append(out, st)
	}
	if d.scripts != nil {
		if ents, err := d.scripts.List(); err == nil {
			out = append(out, ents...)
		}
	}
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
	state := &fixedQid{Synth: memText(fs, "state", func() ([]byte, error) { return []byte(j.State() + "\n"), nil }), path: d.base + 1}
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
		v = &sessionsDir{fs: d.b.fs, hooks: Sessions{M: d.j.Manager()}, qids: map[string]uint64{}}
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
func (d *jobDir) Remove(ctx context.Context) error { return d.b.hooks.R.Remove(d.j.ID()) }

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

// jobClone is an open of b/new or of a session's spawn file. A spec is
// normally one write, and its error comes back on that write. It may also
// arrive in several writes: a shell's printf per line, or a big prompt in
// pieces that each fill a whole 9P message. Those are kept until the spec
// has its --- line and a short write ends a line; else the read of the id,
// an fsync or the close makes the job.
type jobClone struct {
	make func(text string) (string, error)
	mu   sync.Mutex
	id   string
	wend int64  // offset just past the write that made the job
	buf  []byte // a spec arriving in several writes
	at   int64  // offset just past the last write
}

func (h *jobClone) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.id == "" && len(h.buf) > 0 {
		// The spec never completed; say why here rather than hand back the template.
		text := string(h.buf)
		h.buf = nil
		id, err := h.make(text)
		if err != nil {
			return 0, err
		}
		h.id, h.wend = id, h.at
	}
	text := "agent=\nmodel=\nbackend=\ncwd=\nparallel=1\n---\nPROMPT\n"
	if h.id != "" {
		text = h.id + "\n"
		off = idOffset(off, h.wend)
	}
	if off >= int64(len(text)) {
		return 0, nil
	}
	return copy(p, text[off:]), nil
}

func (h *jobClone) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.id != "" {
		return 0, errs.E(errs.Invalid, "this open already made job "+h.id+"; open new again for another")
	}
	// A spec may come in several writes (a shell's printf per line): it is
	// complete once it has its --- line and a write ends a line without
	// filling a whole 9P message.
	h.buf = append(h.buf, p...)
	h.at = off + int64(len(p))
	text := string(h.buf)
	complete := len(p) < fullChunk && strings.HasSuffix(text, "\n") &&
		(strings.Contains(text, "\n---\n") || strings.HasPrefix(text, "---\n"))
	if !complete && len(h.buf) < maxSpec {
		if err := h.checkHead(text); err != nil {
			h.buf = nil
			return 0, err
		}
		return len(p), nil
	}
	h.buf = nil
	id, err := h.make(text)
	if err != nil {
		return 0, err
	}
	h.id, h.wend = id, h.at
	return len(p), nil
}

// checkHead fails early on settings lines that are wrong already, so a
// garbled spec is reported on its write, not held back.
func (h *jobClone) checkHead(text string) error {
	if strings.Contains(text, "\n---\n") || strings.HasPrefix(text, "---\n") {
		return nil
	}
	done := text[:strings.LastIndex(text, "\n")+1]
	for _, line := range strings.Split(done, "\n") {
		if line == "---" {
			return nil
		}
		if _, err := parseKV(line, batch.SpecKeys); err != nil {
			return errs.E(errs.Invalid, "a job spec is key=value lines, a line ---, then the prompt: "+err.Error())
		}
	}
	return nil
}

// maxSpec bounds a job spec held back waiting for its end.
const maxSpec = 4 << 20

// Sync makes a held-back spec take effect, or fail, now (fsync).
func (h *jobClone) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.id != "" || len(h.buf) == 0 {
		return nil
	}
	text := string(h.buf)
	h.buf = nil
	id, err := h.make(text)
	if err != nil {
		return err
	}
	h.id, h.wend = id, h.at
	return nil
}

// idOffset lets the id of a clone file be read at offset 0, as on Plan 9,
// or right after the write that made it, where a shell that opened the
// file read-write (exec 3<>new) reads next.
func idOffset(off, wend int64) int64 {
	if off >= wend {
		return off - wend
	}
	return off
}

// Close starts a spec that never ended a line (printf without \n); its
// error can only go to the log.
func (h *jobClone) Close() error {
	if err := h.Sync(); err != nil {
		log.Printf("job spec at close: %v", err)
	}
	return nil
}

// ParseJobKV parses the settings part of a job spec.
func ParseJobKV(head string) (map[string]string, error) { return parseKV(head, batch.SpecKeys) }
