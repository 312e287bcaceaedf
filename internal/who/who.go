// Package who tells who is asking: the daemon's user, or a stage of a
// session (code the model wrote, which may do only what the tree's
// stage table allows).
//
// A stage is known by its process group. The sandbox makes every stage
// the leader of a new group before its program runs and registers the
// group here with its session; the seccomp filter refuses setsid and
// setpgid to stages, so every process a stage starts, however it forks,
// stays in that group for its life. Reading the group of a process from
// /proc is one small read, and the kernel, not the process, says what it
// is.
//
// A process that runs with no_new_privs but in no registered group is
// treated as a stage of no session: every stage has no_new_privs (it is
// set before Landlock and cannot be cleared), so such a process is a
// stage whose group has ended (an orphan left running) or a sandboxed
// process that is not ollie's. Either way it may only read what is
// public. Processes without no_new_privs are the user's.
package who

import (
	"bytes"
	"os"
	"strconv"
	"sync"

	"ollie.dev/ollie/internal/tree"
)

// Registry maps the process groups of running stages to their
// sessions. The zero value is ready to use.
type Registry struct {
	mu     sync.Mutex
	groups map[int]tree.Principal // process group id -> who it is
}

// Stages is the registry of this process: the executor registers the
// stages it starts, the daemon's 9P server resolves its callers. It is
// process state, like the process table it mirrors, not configuration.
var Stages = &Registry{}

// Add registers process group pgid as a stage of session. The returned
// function unregisters it; call it once the group is dead.
func (r *Registry) Add(pgid int, session string) (remove func()) {
	return r.add(pgid, tree.Principal{Session: session})
}

// AddHook registers process group pgid as a hook run for session.
func (r *Registry) AddHook(pgid int, session string) (remove func()) {
	return r.add(pgid, tree.Principal{Session: session, Hook: true})
}

func (r *Registry) add(pgid int, p tree.Principal) (remove func()) {
	r.mu.Lock()
	if r.groups == nil {
		r.groups = map[int]tree.Principal{}
	}
	r.groups[pgid] = p
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.groups[pgid] == p {
			delete(r.groups, pgid)
		}
		r.mu.Unlock()
	}
}

// Len returns the number of registered stages.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.groups)
}

// Resolve says who process pid is: nil for the user (and for this
// process), a Principal for a stage. A process that is gone, or whose
// status cannot be read, is a stage of no session: refusing is the safe
// answer to a caller that cannot be identified.
func (r *Registry) Resolve(pid int) *tree.Principal {
	if pid == os.Getpid() {
		return nil
	}
	pgid, ok := Pgid(pid)
	if !ok {
		return &tree.Principal{}
	}
	r.mu.Lock()
	p, found := r.groups[pgid]
	r.mu.Unlock()
	if found {
		return &p
	}
	nnp, ok := NoNewPrivs(pid)
	if !ok || nnp {
		return &tree.Principal{}
	}
	return nil
}

// Pgid returns the process group of pid, from /proc/PID/stat.
func Pgid(pid int) (int, bool) {
	f, ok := stat(pid)
	if !ok || len(f) < 3 {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[2]))
	return n, err == nil
}

// State returns the state letter of pid (R, S, D, Z, ...), from
// /proc/PID/stat; ok is false when there is no such process.
func State(pid int) (state byte, ok bool) {
	f, ok := stat(pid)
	if !ok || len(f) < 1 || len(f[0]) != 1 {
		return 0, false
	}
	return f[0][0], true
}

// stat returns the fields of /proc/PID/stat after the command name:
// state ppid pgrp ... The name may hold spaces and parentheses, so the
// fields are counted after its last ')'.
func stat(pid int) ([][]byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	return bytes.Fields(b[i+1:]), true
}

// NoNewPrivs reports whether pid runs with no_new_privs, from
// /proc/PID/status. It is how the FUSE bridge tells, in one read, the
// callers it must ask the daemon about (possible stages) from the
// user's own processes, which go the fast way.
func NoNewPrivs(pid int) (nnp, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false, false
	}
	i := bytes.Index(b, []byte("\nNoNewPrivs:"))
	if i < 0 {
		return false, false
	}
	v := bytes.TrimLeft(b[i+len("\nNoNewPrivs:"):], " \t")
	return len(v) > 0 && v[0] == '1', true
}
