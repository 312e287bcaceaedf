package ninep

import (
	"strings"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/tree"
)

// opNames are the operations reported to Server.OnError, in the words of
// the person who made them (a clunk is a close).
var opNames = map[uint8]string{
	plan9.Topen: "open", plan9.Tcreate: "create", plan9.Tread: "read", plan9.Twrite: "write",
	plan9.Twstat: "wstat", plan9.Tremove: "remove", plan9.Tclunk: "close",
}

// reportErr tells OnError of a failed request on f: the FUSE bridge can
// pass only an errno to the program that failed, so the text must be
// kept somewhere a person finds it ($OLLIE/errors).
func (c *conn) reportErr(r *request, f *fid, err error) {
	op, ok := opNames[r.typ]
	if !ok || c.srv.OnError == nil {
		return
	}
	if r.typ == plan9.Twstat {
		// A null wstat is an fsync, and over FUSE the close(2) of a
		// descriptor: what commits a message. Say so.
		if d, err := plan9.UnmarshalDir(r.data); err == nil && d.IsNull() {
			op = "commit"
		}
	}
	p := fidPath(f)
	if r.typ == plan9.Tcreate {
		p = joinPath(p, r.name)
	}
	c.srv.OnError(f.who, op, p, err)
}

// fidPath names f's file from the nodes it walked through, root
// excluded: "s/1a2b/cfg". A node's name is its stat's, or its own
// (tree.Named) for a file that may be gone.
func fidPath(f *fid) string {
	f.mu.Lock()
	nodes := f.path
	f.mu.Unlock()
	var b strings.Builder
	for i, n := range nodes {
		if i == 0 {
			continue
		}
		name := "?"
		if nn, ok := n.(tree.Named); ok {
			name = nn.Name()
		} else if st, err := n.Stat(); err == nil && st.Name != "" {
			name = st.Name
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(name)
	}
	return b.String()
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
