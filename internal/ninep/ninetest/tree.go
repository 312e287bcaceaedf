// Package ninetest is a small 9P file server for tests of 9P clients and
// the FUSE bridge: a RAM file system with the kinds of files the ollie tree
// has, served by srv9p.
//
//	/hello        "hello, world\n"
//	/dir/         an empty directory
//	/block        length 0; a read blocks until the request is flushed
//	              or Unblock is called
//	/grow         append-only (DMAPPEND); Tree.Append adds to it
//	/ctl          length 0; a write of anything but "ok..." fails
//	              with "bad request: unknown command"
//
// Everything else a client creates is an ordinary RAM file or directory
// supporting create, remove, rename and truncate by wstat.
package ninetest

import (
	"sort"
	"sync"
	"time"

	"9fans.net/go/plan9"
)

type kind uint8

const (
	plain kind = iota
	blocking
	growing
	control
)

// A node is a file or directory. All nodes are guarded by Tree.mu.
type node struct {
	dir      plan9.Dir
	kind     kind
	parent   *node
	children map[string]*node
	data     []byte
}

func (n *node) isDir() bool { return n.dir.Qid.Type&plan9.QTDIR != 0 }

// stat returns n's directory entry as of now.
func (n *node) stat() plan9.Dir {
	d := n.dir
	if n.kind == plain || n.kind == growing {
		d.Length = uint64(len(n.data))
	}
	if n.isDir() {
		d.Length = 0
	}
	return d
}

// touch records a change of content: Qid.Vers changes so clients notice.
func (n *node) touch() {
	n.dir.Qid.Vers++
	n.dir.Mtime = uint32(time.Now().Unix())
}

// Tree is the file tree. It outlives the servers that serve it, so a test
// can kill a server and start another on the same tree, as a daemon that
// restarts finds its files on disk.
type Tree struct {
	mu      sync.Mutex
	root    *node
	nextQid uint64
	unblock chan struct{} // closed and replaced by Unblock
	blocked chan struct{} // one token per read that starts blocking

	// Ctl records the writes /ctl accepted.
	Ctl []string
}

// NewTree returns the tree described in the package comment.
func NewTree() *Tree {
	t := &Tree{unblock: make(chan struct{}), blocked: make(chan struct{}, 1024)}
	t.root = t.newNode(nil, "/", plan9.DMDIR|0777, plain)
	t.root.parent = t.root
	t.add(t.root, "hello", 0666, plain).data = []byte("hello, world\n")
	t.add(t.root, "dir", plan9.DMDIR|0777, plain)
	t.add(t.root, "block", 0444, blocking)
	t.add(t.root, "grow", plan9.DMAPPEND|0666, growing)
	t.add(t.root, "ctl", 0222, control)
	return t
}

func (t *Tree) newNode(parent *node, name string, perm plan9.Perm, k kind) *node {
	now := uint32(time.Now().Unix())
	n := &node{parent: parent, kind: k}
	n.dir = plan9.Dir{
		Qid:   plan9.Qid{Path: t.nextQid},
		Mode:  perm,
		Atime: now,
		Mtime: now,
		Name:  name,
		Uid:   "ollie",
		Gid:   "ollie",
		Muid:  "ollie",
	}
	t.nextQid++
	if perm&plan9.DMDIR != 0 {
		n.dir.Qid.Type |= plan9.QTDIR
		n.children = map[string]*node{}
	}
	if perm&plan9.DMAPPEND != 0 {
		n.dir.Qid.Type |= plan9.QTAPPEND
	}
	return n
}

// add creates a child of dir. Tree.mu must be held (or t unshared).
func (t *Tree) add(dir *node, name string, perm plan9.Perm, k kind) *node {
	n := t.newNode(dir, name, perm, k)
	dir.children[name] = n
	dir.touch()
	return n
}

// Append adds data to /grow, as a session appends to its chat.
func (t *Tree) Append(data string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.root.children["grow"]
	g.data = append(g.data, data...)
	g.touch()
}

// Set replaces the content of the file at path, as the daemon or a tool
// working on disk changes a file behind a client's back.
func (t *Tree) Set(data string, path ...string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.root
	for _, name := range path {
		if n = n.children[name]; n == nil {
			return false
		}
	}
	n.data = []byte(data)
	n.touch()
	return true
}

// Unblock releases every read blocked in /block; each returns "unblocked\n".
func (t *Tree) Unblock() {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.unblock)
	t.unblock = make(chan struct{})
}

// Blocked returns a channel that yields once for each read of /block that
// has reached the server and is blocked, so a test knows a flush will
// find it pending.
func (t *Tree) Blocked() <-chan struct{} { return t.blocked }

// Lookup returns the content of the file at the slash-separated path, and
// whether it exists.
func (t *Tree) Lookup(path ...string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.root
	for _, name := range path {
		if n = n.children[name]; n == nil {
			return nil, false
		}
	}
	return append([]byte(nil), n.data...), true
}

// sortedChildren returns dir's entries in name order, for directory reads.
func (dir *node) sortedChildren() []plan9.Dir {
	ds := make([]plan9.Dir, 0, len(dir.children))
	for _, c := range dir.children {
		ds = append(ds, c.stat())
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
	return ds
}
