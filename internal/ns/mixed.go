package ns

import (
	"sync"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// mixedDir is what s/ and b/ share: fixed files (new, idx), the scripts
// shipped for the directory (read from the config directory), and one
// directory per session or job, each with a block of qids allocated the
// first time it is seen, so its files keep their qids across walks.
type mixedDir struct {
	fs      *tree.FS
	path    uint64
	name    string
	fixed   []tree.Entry
	scripts *tree.DiskDir
	block   int // qids per dynamic entry

	mu   sync.Mutex
	qids map[string]uint64 // entry key -> first qid of its block
}

func newMixedDir(fs *tree.FS, name string, scripts *tree.DiskDir, block int) mixedDir {
	return mixedDir{fs: fs, path: fs.Qids.Next(), name: name, scripts: scripts, block: block, qids: map[string]uint64{}}
}

func (d *mixedDir) Stat() (plan9.Dir, error) { return dirStat(d.fs, d.path, d.name, 0755), nil }

// walkFixed finds a fixed file.
func (d *mixedDir) walkFixed(name string) (tree.Node, bool) {
	for _, e := range d.fixed {
		if e.Name == name {
			return e.Node, true
		}
	}
	return nil, false
}

// walkScript finds a shipped script; it is the last resort of a walk.
func (d *mixedDir) walkScript(name string) (tree.Node, error) {
	if d.scripts != nil {
		return d.scripts.Walk(name)
	}
	return nil, errs.E(errs.NotExist, name)
}

// listFixed lists the fixed files and the scripts.
func (d *mixedDir) listFixed() []plan9.Dir {
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
	return out
}

// qidBlock returns the first qid of key's block.
func (d *mixedDir) qidBlock(key string) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	base, ok := d.qids[key]
	if !ok {
		base = d.fs.Qids.Block(d.block)
		d.qids[key] = base
	}
	return base
}

// forget drops the qid block of an entry that is gone (a session or job
// removed), so the table does not grow for the life of the daemon.
func (d *mixedDir) forget(key string) {
	d.mu.Lock()
	delete(d.qids, key)
	d.mu.Unlock()
}

func dirStat(fs *tree.FS, path uint64, name string, perm plan9.Perm) plan9.Dir {
	return plan9.Dir{Qid: plan9.Qid{Path: path, Type: plan9.QTDIR}, Mode: plan9.DMDIR | perm, Name: name,
		Uid: fs.Uid, Gid: fs.Uid, Muid: fs.Uid, Mtime: fs.Mtime, Atime: fs.Mtime}
}
