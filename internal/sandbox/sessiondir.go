package sandbox

import (
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
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return errs.E(errs.Invalid, "cwd "+dir+" does not exist")
	}
	if real == "/" {
		return errs.E(errs.Permission, "cwd / would give the session's code the whole system; use a project directory")
	}
	if home != "" && real == resolve(home) {
		return errs.E(errs.Permission, "cwd "+real+" is your home directory, which holds your keys; use a project directory inside it")
	}
	for _, p := range private {
		if p == "" {
			continue
		}
		if rp := resolve(p); within(real, rp) || within(rp, real) {
			return errs.E(errs.Permission, "cwd "+real+" overlaps ollie's own "+rp+"; sessions may not work in ollie's configuration, data or runtime directories")
		}
	}
	for _, s := range secretPaths(home) {
		rs := resolve(s)
		if within(real, rs) {
			return errs.E(errs.Permission, "cwd "+real+" is inside protected "+rs)
		}
		if within(rs, real) {
			return errs.E(errs.Permission, "cwd "+real+" contains protected "+rs+"; use a project directory")
		}
	}
	return nil
}

// Within reports whether path is dir or beneath it, after resolving links.
func Within(path, dir string) bool { return within(resolve(path), resolve(dir)) }
