package ns

import (
	"fmt"
	"strings"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// What a stage may do in the tree: NAMESPACE.md's table, kept here and
// nowhere else. The 9P server asks (tree.Guard) before every open,
// create, remove and wstat of a fid whose attach is a stage's; walks and
// stats are free. Everything not in the table is refused.
//
// A request is classified by the nodes it walked, not by the names the
// stage used: a session directory is the session it serves, whether it
// was reached as s/<id>, s/<name> or b/<job>/<k>, so "own" means "the
// session whose stage is asking".

// A place is a kind of path, as the table sees it.
type place int

const (
	placeNone      place = iota // anything not listed: nothing
	placeRoot                   // the root directory
	placePublic                 // help, backends, stats/, t/ sk/ p/ u/ and what is in them
	placeShared                 // m/ and tmp/ and what is in them
	placeHistory                // tr/ and the transcripts in it
	placeLists                  // s/ and b/ themselves, s/idx, the front-end scripts
	placeOwnDir                 // the asking session's directory
	placeOwnRW                  // its plan
	placeOwnSpawn               // its spawn clone file
	placeOwnMCP                 // its mcp clone file
	placeOwnRead                // its chat context reply state usage queue
	placeOtherDir               // another session's directory
	placeOtherRead              // another session's chat and reply
	placeJobDir                 // b/<job>/
	placeOwnJob                 // state and result of a job the asking session spawned
)

var stageTable = []struct {
	place place
	path  string
	ops   tree.Op
}{
	{placeRoot, "/ (list)", tree.OpRead},
	{placePublic, "help backends stats/ t/ sk/ p/ u/", tree.OpRead},
	{placeShared, "m/ tmp/", tree.OpRead | tree.OpWrite | tree.OpCreate},
	{placeHistory, "tr/", tree.OpRead},
	{placeLists, "s/ b/ (list), s/idx, s/ and b/ scripts", tree.OpRead},
	{placeOwnDir, "s/S/ (list)", tree.OpRead},
	{placeOwnRW, "s/S/plan", tree.OpRead | tree.OpWrite},
	{placeOwnSpawn, "s/S/spawn", tree.OpRead | tree.OpWrite},
	{placeOwnMCP, "s/S/mcp", tree.OpRead | tree.OpWrite},
	{placeOwnRead, "s/S/chat context reply state usage queue", tree.OpRead},
	{placeOtherDir, "s/X/ (list)", tree.OpRead},
	{placeOtherRead, "s/X/chat reply", tree.OpRead},
	{placeJobDir, "b/J/ (list)", tree.OpRead},
	{placeOwnJob, "b/J/state result, for a job S spawned", tree.OpRead},
	{placeNone, "everything else: ask/ of any session, a/ x/, cfg ctl env fifo.out prompt fifo.in wait statewait events, s/new b/new, errors", 0},
}

var stageOps = func() map[place]tree.Op {
	m := map[place]tree.Op{}
	for _, r := range stageTable {
		m[r.place] = r.ops
	}
	return m
}()

// tops classify the entries of the root, by node.
var topPlaces = map[string]place{
	"help": placePublic, "backends": placePublic, "stats": placePublic,
	"t": placePublic, "sk": placePublic, "p": placePublic, "u": placePublic,
	"m": placeShared, "tmp": placeShared, "tr": placeHistory,
	"s": placeLists, "b": placeLists,
}

var ownFiles = map[string]place{
	"plan": placeOwnRW, "spawn": placeOwnSpawn, "mcp": placeOwnMCP,
	"chat": placeOwnRead, "context": placeOwnRead, "reply": placeOwnRead,
	"state": placeOwnRead, "usage": placeOwnRead, "queue": placeOwnRead,
}

var otherFiles = map[string]place{"chat": placeOtherRead, "reply": placeOtherRead}

// stageGuard is the tree.Guard of the namespace.
type stageGuard struct {
	top map[tree.Node]place // root entries by identity
}

// newStageGuard classifies the entries of root.
func newStageGuard(root tree.Dir) *stageGuard {
	g := &stageGuard{top: map[tree.Node]place{}}
	for name, p := range topPlaces {
		if n, err := root.Walk(name); err == nil {
			g.top[n] = p
		}
	}
	return g
}

func (g *stageGuard) Allow(who tree.Principal, path []tree.Node, op tree.Op) error {
	if who.Hook {
		// The user's own code, but not a person: consent is not its.
		for _, n := range path {
			if _, ok := n.(*askDir); ok && op != tree.OpRead {
				return errs.E(errs.Permission, "a hook may not answer a consent request: only a person does")
			}
		}
		return nil
	}
	if stageOps[g.classify(who, path)]&op != 0 {
		return nil
	}
	return errs.E(errs.Permission, fmt.Sprintf("sandboxed code may not %s %s", op, pathName(path)))
}

// classify says which row of the table path falls under for who.
func (g *stageGuard) classify(who tree.Principal, path []tree.Node) place {
	if len(path) == 1 {
		return placeRoot
	}
	top := g.top[path[1]]
	switch top {
	case placeNone:
		return placeNone
	case placeLists:
		return g.classifyLists(who, path)
	}
	return top // a whole directory alike: public, shared or history
}

// classifyLists classifies paths under s/ and b/.
func (g *stageGuard) classifyLists(who tree.Principal, path []tree.Node) place {
	for i, n := range path {
		var sd *sessionDir
		switch d := n.(type) {
		case *sessionDir:
			sd = d
		case *memberDir:
			sd = d.sessionDir
		case *jobDir:
			if i == len(path)-1 {
				return placeJobDir
			}
			if i == len(path)-2 && who.Session != "" && d.j.Spec().Parent == who.Session {
				if name := nodeName(path[i+1]); name == "state" || name == "result" {
					return placeOwnJob
				}
			}
			continue
		default:
			continue
		}
		own := who.Session != "" && sd.s.ID() == who.Session
		switch {
		case i == len(path)-1 && own:
			return placeOwnDir
		case i == len(path)-1:
			return placeOtherDir
		case i == len(path)-2:
			f, ok := path[i+1].(*sessFile)
			if !ok {
				return placeNone // ask/ and anything else
			}
			name := f.spec.name
			if own {
				return ownFiles[name]
			}
			return otherFiles[name]
		}
		return placeNone // below ask/
	}
	if len(path) == 2 {
		return placeLists // s/ or b/ itself
	}
	if len(path) == 3 {
		switch nodeName(path[2]) {
		case "new":
			return placeNone
		}
		return placeLists // s/idx and the scripts
	}
	return placeNone
}

func nodeName(n tree.Node) string {
	st, err := n.Stat()
	if err != nil {
		return ""
	}
	return st.Name
}

func pathName(path []tree.Node) string {
	var b strings.Builder
	for _, n := range path[1:] {
		b.WriteString(nodeName(n))
		b.WriteByte('/')
	}
	if b.Len() == 0 {
		return "/"
	}
	return strings.TrimSuffix(b.String(), "/")
}

// stageHelp renders the table for help.
func stageHelp() string {
	var b strings.Builder
	b.WriteString("What code of the model (a stage of session S: inline code, a t/ tool, a\nparallel branch, a sub-agent) may do here; everything else is refused:\n\n")
	for _, r := range stageTable {
		fmt.Fprintf(&b, "  %-28s %s\n", opsText(r.ops), r.path)
	}
	return b.String()
}

func opsText(o tree.Op) string {
	if o == 0 {
		return "nothing"
	}
	var parts []string
	for _, op := range []tree.Op{tree.OpRead, tree.OpWrite, tree.OpCreate, tree.OpRemove} {
		if o&op != 0 {
			parts = append(parts, op.String())
		}
	}
	return strings.Join(parts, ", ")
}
