package tree

import (
	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// FS is what every node of one tree shares: the qid allocator and the
// owner shown in stats.
type FS struct {
	Qids  *Qids
	Uid   string // owner of every file; the daemon's user
	Mtime uint32 // modification time of static nodes: the daemon's start
}

// Entry is one row of a directory table: a name, the node behind it and
// the line of help that documents it.
type Entry struct {
	Name string
	Mode string // as shown in help: r, w, rw, exec, dir ...
	Doc  string
	Node Node
}

// StaticDir is a directory whose children are fixed by a table. Walk, List
// and help are all derived from the table, so adding a file is adding a row.
type StaticDir struct {
	fs      *FS
	name    string
	perm    plan9.Perm
	path    uint64
	entries []Entry
	index   map[string]int
}

// NewDir builds a directory from a table.
func (fs *FS) NewDir(name string, perm plan9.Perm, entries ...Entry) *StaticDir {
	return fs.newDir(name, perm, fs.Qids.Next(), entries)
}

// NewRoot builds the root directory, whose qid path is 0.
func (fs *FS) NewRoot(perm plan9.Perm, entries ...Entry) *StaticDir {
	return fs.newDir("/", perm, 0, entries)
}

func (fs *FS) newDir(name string, perm plan9.Perm, path uint64, entries []Entry) *StaticDir {
	d := &StaticDir{fs: fs, name: name, perm: perm | plan9.DMDIR, path: path, index: map[string]int{}}
	for _, e := range entries {
		d.Add(e)
	}
	return d
}

// Add appends a row. It is meant for building the tree, before serving.
func (d *StaticDir) Add(e Entry) {
	if _, dup := d.index[e.Name]; dup {
		panic("tree: duplicate entry " + e.Name + " in " + d.name)
	}
	d.index[e.Name] = len(d.entries)
	d.entries = append(d.entries, e)
}

// Entries returns the table.
func (d *StaticDir) Entries() []Entry { return d.entries }

func (d *StaticDir) Stat() (plan9.Dir, error) {
	return plan9.Dir{
		Qid:   qid(d.path, 0, d.perm),
		Mode:  d.perm,
		Name:  d.name,
		Uid:   d.fs.Uid,
		Gid:   d.fs.Uid,
		Muid:  d.fs.Uid,
		Atime: d.fs.Mtime,
		Mtime: d.fs.Mtime,
	}, nil
}

func (d *StaticDir) Walk(name string) (Node, error) {
	if i, ok := d.index[name]; ok {
		return d.entries[i].Node, nil
	}
	return nil, errs.E(errs.NotExist, name)
}

func (d *StaticDir) List() ([]plan9.Dir, error) {
	out := make([]plan9.Dir, 0, len(d.entries))
	for _, e := range d.entries {
		st, err := e.Node.Stat()
		if err != nil {
			continue // gone since the table was built; not listed
		}
		st.Name = e.Name
		out = append(out, st)
	}
	return out, nil
}

// Help documents the table, and the tables below it.
func (d *StaticDir) Help() []HelpRow {
	var rows []HelpRow
	for _, e := range d.entries {
		name := e.Name
		// By type, not by a stat: the stat of help renders help.
		if _, ok := e.Node.(Dir); ok {
			name += "/"
		}
		rows = append(rows, HelpRow{Path: name, Mode: e.Mode, Doc: e.Doc})
		if sub, ok := e.Node.(Documented); ok {
			for _, r := range sub.Help() {
				r.Path = name + r.Path
				rows = append(rows, r)
			}
		}
	}
	return rows
}
