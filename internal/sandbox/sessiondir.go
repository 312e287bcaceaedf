package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/dirwatch"
	"ollie.dev/ollie/internal/errs"
)

// CheckSessionDir refuses, at creation, a working directory that would
// hand a session's stages more than a project: the whole system (/), the
// user's home itself (it holds ~/.ssh and the rest), anything inside
// ollie's own directories (private: configuration with agents, hooks and
// tools, data, state, the runtime directory with the socket, the mount),
// and a secret directory or one that contains one. dir must exist; its
// links are resolved first, since the sandbox grants the real directory.
// Every way to make or move a session (s/new, cfg, b/new, spawn) goes
// through here, so a session can never be created where its first tool
// call would fail or its stages could rewrite ollie.
func CheckSessionDir(dir, home string, private []string) error {
	if !filepath.IsAbs(dir) {
		return errs.E(errs.Invalid, "cwd "+dir+" is not an absolute path")
	}
	real, ok := newResolver().resolve(filepath.Clean(dir))
	if !ok {
		return errs.E(errs.Invalid, "cwd "+dir+" does not exist")
	}
	if real == "/" {
		return errs.E(errs.Permission, "cwd / would give the session's code the whole system; use a project directory")
	}
	pr := protectedFor(home, private)
	if home != "" && real == pr.home {
		return errs.E(errs.Permission, "cwd "+real+" is your home directory, which holds your keys; use a project directory inside it")
	}
	for _, rp := range pr.private {
		if within(real, rp) || within(rp, real) {
			return errs.E(errs.Permission, "cwd "+real+" overlaps ollie's own "+rp+"; sessions may not work in ollie's configuration, data or runtime directories")
		}
	}
	for _, sp := range pr.secrets {
		if within(real, sp) {
			return errs.E(errs.Permission, "cwd "+real+" is inside protected "+sp)
		}
		if within(sp, real) {
			return errs.E(errs.Permission, "cwd "+real+" contains protected "+sp+"; use a project directory")
		}
	}
	return nil
}

// WarmSessionDirCheck resolves ahead of time what CheckSessionDir with
// home and private compares a cwd with, as the first check would: the
// first s/new of a daemon spent 0.7 to 0.9 ms resolving and watching it.
func WarmSessionDirCheck(home string, private []string) { protectedFor(home, private) }

// protected are the real paths a session's cwd is kept away from.
type protected struct {
	home             string
	private, secrets []string
}

// protectedCache keeps the last protected paths resolved, with what
// inotify says of every name the resolution looked up: they are the same
// for every session of a daemon, and resolving some 30 paths, a
// component at a time, was a quarter of a session's creation. Any of
// those names made, removed or renamed (a link made where a secret is, a
// directory moved), or its directory moved, makes the next check resolve
// them again; a resolution that went through a link is not kept.
var protectedCache struct {
	mu   sync.Mutex
	w    *dirwatch.Watch
	key  string
	val  protected
	snap *dirwatch.Snap // nil: nothing kept
}

func protectedFor(home string, private []string) protected {
	c := &protectedCache
	key := home + "\x00" + strings.Join(private, "\x00")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		c.w = dirwatch.NewEntries()
	}
	if c.key == key && c.w.Unchanged(c.snap) {
		return c.val
	}
	// Resolved, its directories watched, then resolved again: a change
	// made before the watch is in the second resolution, one made after
	// it is an event that makes the next check start over.
	v, rs := resolveProtected(home, private)
	c.key, c.val, c.snap = key, v, nil
	if rs.links {
		return v
	}
	snap, ok := c.w.Snapshot(rs.entries())
	if !ok {
		return v
	}
	v2, rs2 := resolveProtected(home, private)
	if rs2.links || !v.equal(v2) || !slices.Equal(rs.entries(), rs2.entries()) {
		c.val = v2
		return v2
	}
	c.snap = snap
	return v
}

func resolveProtected(home string, private []string) (protected, *resolver) {
	rs := newResolver()
	var v protected
	if home != "" {
		v.home = rs.path(home)
	}
	for _, p := range private {
		if p != "" {
			v.private = append(v.private, rs.path(p))
		}
	}
	for _, s := range secretPaths(home) {
		v.secrets = append(v.secrets, rs.path(s))
	}
	return v, rs
}

func (p protected) equal(q protected) bool {
	return p.home == q.home && slices.Equal(p.private, q.private) && slices.Equal(p.secrets, q.secrets)
}

// A resolver is resolve for the many paths of one check, which share
// their leading directories (the home, ~/.config, /etc): each directory is
// looked at once per check, not once per path under it. It notes the
// names it looked up, and whether it followed a link.
type resolver struct {
	m      map[string]resolved
	looked map[dirwatch.Entry]bool
	links  bool
}

func newResolver() *resolver {
	return &resolver{m: map[string]resolved{}, looked: map[dirwatch.Entry]bool{}}
}

type resolved struct {
	path string
	ok   bool // the path exists; else path is the cleaned input
}

// entries are the names r looked up, sorted.
func (r *resolver) entries() []dirwatch.Entry {
	e := make([]dirwatch.Entry, 0, len(r.looked))
	for k := range r.looked {
		e = append(e, k)
	}
	slices.SortFunc(e, func(a, b dirwatch.Entry) int {
		if c := strings.Compare(a.Dir, b.Dir); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return e
}

// path is resolve(p).
func (r *resolver) path(p string) string {
	if !filepath.IsAbs(p) {
		r.links = true // resolved by EvalSymlinks, whose steps are not seen
		return resolve(p)
	}
	q, _ := r.resolve(filepath.Clean(p))
	return q
}

// resolve returns what filepath.EvalSymlinks returns for the clean
// absolute path p and whether it succeeded (p itself if it did not): the
// real path of p's directory, joined with p's last element, and followed
// if that is a link.
func (r *resolver) resolve(p string) (string, bool) {
	if p == "/" {
		return p, true
	}
	if v, ok := r.m[p]; ok {
		return v.path, v.ok
	}
	v := resolved{path: p}
	if dir, ok := r.resolve(filepath.Dir(p)); ok {
		r.looked[dirwatch.Entry{Dir: dir, Name: filepath.Base(p)}] = true
		q := filepath.Join(dir, filepath.Base(p))
		if fi, err := os.Lstat(q); err == nil {
			v = resolved{path: q, ok: true}
			if fi.Mode()&os.ModeSymlink != 0 {
				r.links = true
				if t, err := filepath.EvalSymlinks(q); err == nil {
					v.path = t
				} else {
					v = resolved{path: p}
				}
			}
		}
	}
	r.m[p] = v
	return v.path, v.ok
}

// Within reports whether path is dir or beneath it, after resolving links.
func Within(path, dir string) bool { return within(resolve(path), resolve(dir)) }
