package ns

import (
	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
)

// openPlan opens plan, a file rewritten whole (tree.Rewrite): the open
// starts from the current plan (or from nothing with O_TRUNC, without
// touching the plan on disk), and the commit (close, fsync) replaces the
// plan atomically and durably through the session. A kill -9 before the
// commit leaves the old plan; a write past the limit fails rather than
// being cut (NAMESPACE rules 1 and 4).
func openPlan(s *session.Session, mode uint8) (*tree.Rewrite, error) {
	trunc := mode&plan9.OTRUNC != 0
	var content []byte
	if !trunc {
		content = s.Plan()
	}
	// O_TRUNC empties it at the commit, even with nothing written (`: > plan`).
	return tree.NewRewrite("plan", maxPlan, content, trunc, tree.RewriteOps{
		Save:   func(b []byte, _ int64) error { return s.SetPlan(b) },
		Reload: s.Plan,
	}), nil
}

const maxPlan = 256 << 10

// statPlan reports the plan's true length (NAMESPACE rule 9: `[ -s plan ]`
// works) and a version that changes with each commit, which replaces the
// file: a new inode, a new mtime.
func statPlan(s *session.Session, st *plan9.Dir) { statDisk(s.PlanPath(), st) }
