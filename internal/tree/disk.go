package tree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// DiskPolicy says what clients may do in an on-disk part of the tree. The
// zero policy is read-only.
type DiskPolicy struct {
	Create bool // create files
	Mkdir  bool // create subdirectories
	Write  bool // write existing files
	Remove bool
	Rename bool
	Exec   bool // files are programs: created 0755 and shown executable
	Sync   bool // fsync each write before acknowledging it
	// Atomic: a file opened for writing is rewritten whole at the commit
	// (close or fsync), atomically and durably, never truncated at open
	// (rewrite.go). Sync is then implied.
	Atomic bool
	// Validate, if set, checks the whole content of a file before it
	// replaces the file on disk; the write that makes content invalid
	// fails and changes nothing. Returning an error that wraps
	// ErrIncomplete holds the content back until a later write completes it.
	Validate func(name string, data []byte) error
	// Synth lists synthesized files shown in the top directory (t/idx).
	// Their names are reserved: they cannot be created or renamed onto.
	Synth []Entry
	// Changed, if set, is called after a change through the tree has
	// landed on disk: a write's commit, a remove, a rename. It must not
	// block (the writer waits for it).
	Changed func()
}

func (p *DiskPolicy) changed() {
	if p.Changed != nil {
		p.Changed()
	}
}

// ErrIncomplete is returned by a Validate function for content that is
// not wrong yet, only unfinished (a JSON document cut between writes).
var ErrIncomplete = errors.New("incomplete")

// DiskDir is a directory of the tree backed by a directory on disk. All
// access goes through an os.Root, so no name or symlink can reach outside.
type DiskDir struct {
	fs   *FS
	root *os.Root
	rel  string // below root; "." for the top
	name string
	pol  *DiskPolicy
}

// NewDiskDir serves the directory at root as name.
func (fs *FS) NewDiskDir(name string, root *os.Root, pol *DiskPolicy) *DiskDir {
	return &DiskDir{fs: fs, root: root, rel: ".", name: name, pol: pol}
}

// Root returns the os.Root behind the directory.
func (d *DiskDir) Root() *os.Root { return d.root }

func (d *DiskDir) top() bool { return d.rel == "." }

func (d *DiskDir) child(name string) string {
	if d.top() {
		return name
	}
	return d.rel + "/" + name
}

func (d *DiskDir) Stat() (plan9.Dir, error) {
	fi, err := d.root.Stat(d.rel)
	if err != nil {
		return plan9.Dir{}, diskErr(d.rel, err)
	}
	return d.fs.diskStat(d.name, fi, d.pol), nil
}

func (d *DiskDir) Walk(name string) (Node, error) {
	n, _, err := d.WalkStat(name)
	return n, err
}

func (d *DiskDir) WalkStat(name string) (Node, plan9.Dir, error) {
	if d.top() {
		for _, e := range d.pol.Synth {
			if e.Name == name {
				st, err := e.Node.Stat()
				return e.Node, st, err
			}
		}
	}
	if !walkable(name) {
		return nil, plan9.Dir{}, errs.E(errs.NotExist, name)
	}
	rel := d.child(name)
	fi, err := d.root.Stat(rel)
	if err != nil {
		return nil, plan9.Dir{}, diskErr(name, err)
	}
	if fi.IsDir() {
		return &DiskDir{fs: d.fs, root: d.root, rel: rel, name: name, pol: d.pol}, d.fs.diskStat(name, fi, d.pol), nil
	}
	if !fi.Mode().IsRegular() {
		return nil, plan9.Dir{}, errs.E(errs.Permission, name+": not a regular file")
	}
	return &DiskFile{dir: d, rel: rel, name: name}, d.fs.diskStat(name, fi, d.pol), nil
}

func (d *DiskDir) List() ([]plan9.Dir, error) {
	f, err := d.root.Open(d.rel)
	if err != nil {
		return nil, diskErr(d.rel, err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, diskErr(d.rel, err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var out []plan9.Dir
	if d.top() {
		for _, e := range d.pol.Synth {
			if st, err := e.Node.Stat(); err == nil {
				st.Name = e.Name
				out = append(out, st)
			}
		}
	}
	for _, e := range ents {
		if !walkable(e.Name()) {
			continue
		}
		fi, err := d.root.Stat(d.child(e.Name())) // follows symlinks that stay inside
		if err != nil || !(fi.IsDir() || fi.Mode().IsRegular()) {
			continue
		}
		out = append(out, d.fs.diskStat(e.Name(), fi, d.pol))
	}
	return out, nil
}

// Help documents a disk directory as a whole; its files are the user's.
func (d *DiskDir) Help() []HelpRow {
	var rows []HelpRow
	for _, e := range d.pol.Synth {
		rows = append(rows, HelpRow{Path: e.Name, Mode: e.Mode, Doc: e.Doc})
	}
	return rows
}

func (d *DiskDir) Create(ctx context.Context, name string, perm plan9.Perm, mode uint8) (Node, Handle, error) {
	if err := d.checkNewName(name); err != nil {
		return nil, nil, err
	}
	rel := d.child(name)
	if perm&plan9.DMDIR != 0 {
		if !d.pol.Mkdir {
			return nil, nil, errs.E(errs.Permission, "cannot make directories in "+d.name)
		}
		if err := d.root.Mkdir(rel, 0755); err != nil {
			return nil, nil, diskErr(name, err)
		}
		d.syncDir()
		return &DiskDir{fs: d.fs, root: d.root, rel: rel, name: name, pol: d.pol}, nil, nil
	}
	if !d.pol.Create {
		return nil, nil, errs.E(errs.Permission, "cannot create files in "+d.name)
	}
	fperm := os.FileMode(0644)
	if d.pol.Exec {
		fperm = 0755
	}
	f, err := d.root.OpenFile(rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, fperm)
	if err != nil {
		return nil, nil, diskErr(name, err)
	}
	d.syncDir()
	n := &DiskFile{dir: d, rel: rel, name: name}
	h, err := n.handle(f, mode, true)
	return n, h, err
}

func (d *DiskDir) checkNewName(name string) error {
	if !validName(name) {
		return errs.E(errs.Invalid, "bad file name "+quote(name)+": use letters, digits, '.', '_' and '-'")
	}
	for _, e := range d.pol.Synth {
		if d.top() && e.Name == name {
			return errs.E(errs.Exist, name+" is reserved")
		}
	}
	return nil
}

func (d *DiskDir) Remove(ctx context.Context) error {
	if d.top() {
		return errs.E(errs.Permission, "cannot remove "+d.name)
	}
	if !d.pol.Remove {
		return errs.E(errs.Permission, "cannot remove in "+d.name)
	}
	if err := d.root.Remove(d.rel); err != nil {
		return diskErr(d.name, err)
	}
	d.pol.changed()
	return nil
}

func (d *DiskDir) Wstat(ctx context.Context, st *plan9.Dir) error {
	if st.Name != "" && st.Name != d.name {
		if d.top() {
			return errs.E(errs.Permission, "cannot rename "+d.name)
		}
		return d.parent().rename(d.rel, st.Name)
	}
	return nil // mode and times of directories are not ours to keep
}

// parent returns the directory that holds d (d must not be the top).
func (d *DiskDir) parent() *DiskDir {
	rel := path.Dir(d.rel)
	return &DiskDir{fs: d.fs, root: d.root, rel: rel, name: path.Base(rel), pol: d.pol}
}

func (d *DiskDir) rename(oldrel, newname string) error {
	if !d.pol.Rename {
		return errs.E(errs.Permission, "cannot rename in "+d.name)
	}
	if err := d.checkNewName(newname); err != nil {
		return err
	}
	if err := d.validRename(oldrel, newname); err != nil {
		return err
	}
	if err := d.root.Rename(oldrel, d.child(newname)); err != nil {
		return diskErr(newname, err)
	}
	d.syncDir()
	d.pol.changed()
	return nil
}

// validRename checks a file of a validated directory under its new name
// (mv sk/a.md sk/b.md must not leave a skill whose name: is a).
func (d *DiskDir) validRename(oldrel, newname string) error {
	if d.pol.Validate == nil {
		return nil
	}
	fi, err := d.root.Stat(oldrel)
	if err != nil || !fi.Mode().IsRegular() {
		return nil // a directory, or gone: the rename reports it
	}
	data, err := d.root.ReadFile(oldrel)
	if err != nil {
		return diskErr(newname, err)
	}
	err = d.pol.Validate(newname, data)
	if errors.Is(err, ErrIncomplete) {
		return errs.E(errs.Invalid, newname+": unfinished content")
	}
	return err
}

// syncDir makes a create, rename or remove in d durable.
func (d *DiskDir) syncDir() {
	if d.pol.Sync || d.pol.Atomic {
		d.syncDirErr()
	}
}

func (d *DiskDir) syncDirErr() error {
	f, err := d.root.Open(d.rel)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// diskStat converts a FileInfo to a 9P stat, masking permissions by policy.
func (fs *FS) diskStat(name string, fi os.FileInfo, pol *DiskPolicy) plan9.Dir {
	perm := plan9.Perm(fi.Mode().Perm())
	var dev, ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = st.Dev, st.Ino
	}
	d := plan9.Dir{
		Name:   name,
		Uid:    fs.Uid,
		Gid:    fs.Uid,
		Muid:   fs.Uid,
		Mtime:  uint32(fi.ModTime().Unix()),
		Atime:  uint32(fi.ModTime().Unix()),
		Length: uint64(fi.Size()),
	}
	if fi.IsDir() {
		perm = 0555
		if pol.Create || pol.Mkdir {
			perm |= 0200
		}
		perm |= plan9.DMDIR
		d.Length = 0
	} else {
		if !pol.Write {
			perm &^= 0222
		}
		if !pol.Exec {
			perm &^= 0111
		}
	}
	d.Mode = perm
	d.Qid = qid(fs.Qids.Disk(dev, ino), version(fi.ModTime(), fi.Size()), perm)
	return d
}

// version derives Qid.Vers from what changes with a file's content, so a
// change made on disk behind the daemon's back is seen too.
func version(mtime time.Time, size int64) uint32 {
	x := uint64(mtime.UnixNano()) ^ uint64(size)*0x9E3779B97F4A7C15
	return uint32(x ^ x>>32)
}

func walkable(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// diskErr turns an os error into a Plan 9 style error of the right kind.
func diskErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	k := errs.KindOf(err)
	if k == errs.Other && strings.Contains(err.Error(), "escapes") {
		k = errs.Permission
	}
	return errs.E(k, name)
}
