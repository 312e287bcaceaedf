package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ollie.dev/ollie/internal/agentcfg"
	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/index"
	"ollie.dev/ollie/internal/session"
)

// compose renders the system prompt from the agent configuration's parts:
// files of p/ and the output of plugins in x/, each with the session's
// variables ({{cwd}}, {{id}}, {{name}}, {{agent}}, {{model}}, {{backend}},
// {{date}}, {{ollie}}, {{session}}, {{tools}}, {{skills}}, {{toolnames}})
// substituted. With no parts listed,
// p/base.md is the prompt. A model without native tool calling gets the
// fenced-block instructions at the end.
func (r *Runner) compose(ctx context.Context, a *agentcfg.Agent, m session.Meta, st *setup) (string, error) {
	vars := r.vars(m, st)
	parts := a.Prompt
	if len(parts) == 0 {
		parts = []agentcfg.Part{{File: "base.md"}}
	}
	texts := make([]string, 0, len(parts)+1)
	for _, p := range parts {
		var text string
		var err error
		if p.File != "" {
			text, err = r.promptFile(p.File)
		} else {
			text, err = r.promptExec(ctx, vars.expand(p.Exec), m.Cwd, a.PassEnv)
		}
		if err != nil {
			return "", err
		}
		texts = append(texts, vars.expand(text))
	}
	return joinParts(texts, st.fenced), nil
}

// joinParts joins a prompt's parts, each after a newline unless the text
// before ends with a blank line, and the fenced-block instructions after
// a newline, if fenced. One part is the prompt as it is, not a copy.
func joinParts(parts []string, fenced bool) string {
	if fenced {
		parts = append(parts, backend.FencedInstructions)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	n := 0
	for _, t := range parts {
		n += len(t) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for i, t := range parts {
		switch {
		case fenced && i == len(parts)-1:
			b.WriteString("\n")
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n"):
			b.WriteString("\n")
		}
		b.WriteString(t)
	}
	return b.String()
}

// promptVars gives the value of a prompt part's variable {{name}}, and
// whether there is one.
type promptVars func(name string) (string, bool)

// vars are the variables of m's prompt parts. Each value is made when a
// part asks for it: a strings.Replacer of all of them, built at every
// composition, was 9 KB of garbage in each session's creation (a third
// of what it allocated) and as much in each turn.
func (r *Runner) vars(m session.Meta, st *setup) promptVars {
	return func(name string) (string, bool) {
		switch name {
		case "cwd":
			return m.Cwd, true
		case "id":
			return m.ID, true
		case "name":
			return m.Name, true
		case "agent":
			return m.Agent, true
		case "model":
			return st.model, true
		case "backend":
			return st.be.Name(), true
		case "date":
			return time.Now().Format("2006-01-02"), true
		case "ollie":
			return r.o.Mount, true
		case "session":
			if r.o.Mount == "" {
				return "", true
			}
			return filepath.Join(r.o.Mount, "s", m.ID), true
		case "tools":
			return r.readConfig("t", "idx"), true
		case "skills":
			return r.readConfig("sk", "idx"), true
		case "toolnames":
			return names(r.readConfig("t", "idx")), true
		}
		return "", false
	}
}

// expand replaces each {{name}} in text that v knows with its value,
// from left to right, as a strings.Replacer of them all would: a value
// is not expanded again, and what v does not know stays as it is.
func (v promptVars) expand(text string) string {
	type sub struct {
		at, end int // the variable's bytes in text
		val     string
	}
	var subs []sub
	size := len(text)
	for i := 0; ; {
		j := strings.Index(text[i:], "{{")
		if j < 0 {
			break
		}
		i += j
		if k := strings.Index(text[i+2:], "}}"); k >= 0 {
			if val, ok := v(text[i+2 : i+2+k]); ok {
				end := i + 2 + k + 2
				subs = append(subs, sub{i, end, val})
				size += len(val) - (end - i)
				i = end
				continue
			}
		}
		i++ // not a variable here: a later one may begin inside it
	}
	if len(subs) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(size)
	prev := 0
	for _, x := range subs {
		b.WriteString(text[prev:x.at])
		b.WriteString(x.val)
		prev = x.end
	}
	b.WriteString(text[prev:])
	return b.String()
}

// names are the names of an idx's lines (name: description), separated
// by spaces: enough for a prompt to say what exists, at a few tokens each.
func names(idx string) string {
	var out []string
	for line := range strings.Lines(idx) {
		if name, _, ok := strings.Cut(line, ":"); ok {
			out = append(out, name)
		}
	}
	return strings.Join(out, " ")
}

// Warm reads, ahead of the first session, the indexes of t/ and sk/
// that every system prompt shows and readConfig then keeps: the daemon
// calls it in the background once it serves.
func (r *Runner) Warm() {
	r.readConfig("t", "idx")
	r.readConfig("sk", "idx")
}

// readConfig reads an index the tree synthesizes; for the prompt it is
// rebuilt from the directory, so the prompt does not depend on a mount.
// It is cached while no entry of the directory changes: inotify says so
// where it can (internal/dirwatch); elsewhere, a stat per file (the entries'
// sizes and mtimes) still costs less than reading every script at every
// turn.
func (r *Runner) readConfig(dir, name string) string {
	if name != "idx" {
		return ""
	}
	path := filepath.Join(r.o.Config.ConfigDir, dir)
	stamp := r.stamp(path)
	r.mu.Lock()
	c, ok := r.idx[dir]
	r.mu.Unlock()
	if ok && stamp != "" && c.stamp == stamp {
		return c.v
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return ""
	}
	defer root.Close()
	var text string
	if dir == "t" {
		text = string(index.Tools(root))
	} else {
		text = string(index.Skills(root))
	}
	r.mu.Lock()
	r.idx[dir] = kept[string]{stamp: stamp, v: text}
	r.mu.Unlock()
	return text
}

// kept is what was made of a configuration directory, or of a file in
// it, when the directory was in the state stamp names (Runner.stamp).
type kept[T any] struct {
	stamp string
	v     T
}

// keptFile returns what load makes of the file name of dir (its bytes,
// or the error reading them), from cache while dir is unchanged: every
// turn and every new session read the agent's configuration and its
// prompt's parts. A link is loaded every time: its target's changes make
// no event in dir.
func keptFile[T any](r *Runner, cache map[string]kept[T], dir, name string, load func([]byte, error) (T, error)) (T, error) {
	path := filepath.Join(dir, name)
	stamp := r.stamp(dir)
	r.mu.Lock()
	c, ok := cache[name]
	r.mu.Unlock()
	if ok && stamp != "" && c.stamp == stamp {
		return c.v, nil
	}
	v, err := load(os.ReadFile(path))
	if err != nil {
		return v, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && stamp != "" {
		r.mu.Lock()
		cache[name] = kept[T]{stamp: stamp, v: v}
		r.mu.Unlock()
	}
	return v, nil
}

// stamp names the state of dir's entries: inotify's generation of it, or
// where it cannot be watched its fingerprint; "" when neither can be
// told. It is taken before the directory is read: a change made while it
// is read gives the next call another stamp.
func (r *Runner) stamp(dir string) string {
	if gen, ok := r.watch.Gen(dir); ok {
		return "\x00" + strconv.FormatUint(gen, 10) // no fingerprint starts with NUL
	}
	return fingerprint(dir)
}

// fingerprint names, sizes and mtimes of the entries of dir.
func fingerprint(dir string) string {
	f, err := os.Open(dir)
	if err != nil {
		return ""
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			return ""
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

func (r *Runner) promptFile(name string) (string, error) {
	// name is a name in p/ (agentcfg).
	return keptFile(r, r.parts, filepath.Join(r.o.Config.ConfigDir, "p"), name, func(b []byte, err error) (string, error) {
		if err != nil {
			return "", errs.E(errs.NotExist, "prompt part p/"+name)
		}
		return string(b), nil
	})
}

// promptExec runs a plugin of x/ for its output. Plugins are the user's
// own programs, run by the daemon with a time limit; only x/ is allowed.
// Their output becomes the system prompt, a file of the tree, so they get
// the daemon's environment without its keys, like hooks.
func (r *Runner) promptExec(ctx context.Context, cmdline, cwd string, pass []string) (string, error) {
	args := strings.Fields(cmdline)
	if len(args) == 0 {
		return "", errs.E(errs.Invalid, "empty exec prompt part")
	}
	name := strings.TrimPrefix(args[0], "x/")
	if strings.Contains(name, "/") || name == ".." {
		return "", errs.E(errs.Invalid, "exec prompt part "+cmdline+": only plugins in x/ may run")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.o.Config.ConfigDir, "x", name), args[1:]...)
	cmd.Dir, cmd.Env = cwd, r.o.Redact.Env(os.Environ(), pass)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", errs.E(errs.Other, "prompt part "+cmdline+": "+strings.TrimSpace(stderr.String()), err)
	}
	return out.String(), nil
}
