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
	var b strings.Builder
	for _, p := range parts {
		var text string
		var err error
		if p.File != "" {
			text, err = r.promptFile(p.File)
		} else {
			text, err = r.promptExec(ctx, vars.Replace(p.Exec), m.Cwd, a.PassEnv)
		}
		if err != nil {
			return "", err
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
			b.WriteString("\n")
		}
		b.WriteString(vars.Replace(text))
	}
	if st.fenced {
		b.WriteString("\n" + backend.FencedInstructions)
	}
	return b.String(), nil
}

func (r *Runner) vars(m session.Meta, st *setup) *strings.Replacer {
	sess := ""
	if r.o.Mount != "" {
		sess = filepath.Join(r.o.Mount, "s", m.ID)
	}
	tools := r.readConfig("t", "idx")
	return strings.NewReplacer(
		"{{cwd}}", m.Cwd, "{{id}}", m.ID, "{{name}}", m.Name, "{{agent}}", m.Agent,
		"{{model}}", st.model, "{{backend}}", st.be.Name(),
		"{{date}}", time.Now().Format("2006-01-02"),
		"{{ollie}}", r.o.Mount, "{{session}}", sess,
		"{{tools}}", tools, "{{skills}}", r.readConfig("sk", "idx"),
		"{{toolnames}}", names(tools),
	)
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
		return c.text
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
	r.idx[dir] = cachedIdx{stamp: stamp, text: text}
	r.mu.Unlock()
	return text
}

type cachedIdx struct{ stamp, text string }

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
	dir := filepath.Join(r.o.Config.ConfigDir, "p")
	path := filepath.Join(dir, name)
	// Kept while p/ is unchanged, as the agents are (loadAgent): every
	// turn and every new session read it. name is a name in p/
	// (agentcfg); a link is read every time, as its target's changes
	// make no event in p/.
	stamp := r.stamp(dir)
	r.mu.Lock()
	c, ok := r.parts[name]
	r.mu.Unlock()
	if ok && stamp != "" && c.stamp == stamp {
		return c.text, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", errs.E(errs.NotExist, "prompt part p/"+name)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && stamp != "" {
		r.mu.Lock()
		r.parts[name] = cachedIdx{stamp: stamp, text: string(b)}
		r.mu.Unlock()
	}
	return string(b), nil
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
