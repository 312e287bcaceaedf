package sandbox

import (
	"os"
	"path/filepath"

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
	rs := resolver{}
	real, ok := rs.resolve(filepath.Clean(dir))
	if !ok {
		return errs.E(errs.Invalid, "cwd "+dir+" does not exist")
	}
	if real == "/" {
		return errs.E(errs.Permission, "cwd / would give the session's code the whole system; use a project directory")
	}
	if home != "" && real == rs.path(home) {
		return errs.E(errs.Permission, "cwd "+real+" is your home directory, which holds your keys; use a project directory inside it")
	}
	for _, p := range private {
		if p == "" {
			continue
		}
		if rp := rs.path(p); within(real, rp) || within(rp, real) {
			return errs.E(errs.Permission, "cwd "+real+" overlaps ollie's own "+rp+"; sessions may not work in ollie's configuration, data or runtime directories")
		}
	}
	for _, s := range secretPaths(home) {
		sp := rs.path(s)
		if within(real, sp) {
			return errs.E(errs.Permission, "cwd "+real+" is inside protected "+sp)
		}
		if within(sp, real) {
			return errs.E(errs.Permission, "cwd "+real+" contains protected "+sp+"; use a project directory")
		}
	}
	return nil
}

// A resolver is resolve for the many paths of one check, which share
// their leading directories (the home, ~/.config, /etc): each directory is
// looked at once per check, not once per path under it. It lives for one
// call, so a link made after it still counts at the next.
type resolver map[string]resolved

type resolved struct {
	path string
	ok   bool // the path exists; else path is the cleaned input
}

// path is resolve(p).
func (r resolver) path(p string) string {
	if !filepath.IsAbs(p) {
		return resolve(p)
	}
	q, _ := r.resolve(filepath.Clean(p))
	return q
}

// resolve returns what filepath.EvalSymlinks returns for the clean
// absolute path p and whether it succeeded (p itself if it did not): the
// real path of p's directory, joined with p's last element, and followed
// if that is a link.
func (r resolver) resolve(p string) (string, bool) {
	if p == "/" {
		return p, true
	}
	if v, ok := r[p]; ok {
		return v.path, v.ok
	}
	v := resolved{path: p}
	if dir, ok := r.resolve(filepath.Dir(p)); ok {
		q := filepath.Join(dir, filepath.Base(p))
		if fi, err := os.Lstat(q); err == nil {
			v = resolved{path: q, ok: true}
			if fi.Mode()&os.ModeSymlink != 0 {
				if t, err := filepath.EvalSymlinks(q); err == nil {
					v.path = t
				} else {
					v = resolved{path: p}
				}
			}
		}
	}
	r[p] = v
	return v.path, v.ok
}

// Within reports whether path is dir or beneath it, after resolving links.
func Within(path, dir string) bool { return within(resolve(path), resolve(dir)) }
