package ns

import (
	"context"
	"strings"
	"sync"

	"ollie.dev/ollie/internal/batch"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/valid"
)

// cloneFile is an open of a clone file (s/new, b/new, a session's spawn):
// the spec written is one message (msgwrite.go), and what it makes (a
// session, a job) is made at its commit: the close, an fsync, or the
// first read of the same fid, which then returns the new id.
type cloneFile struct {
	make     func(spec string) (string, error)
	template string // what a read returns before anything was made

	mu   sync.Mutex // taken before msg's
	msg  *msgHandle
	id   string
	err  error // why the last spec made nothing: reads say so
	n    int64 // bytes written, accepted
	wend int64 // offset just past the spec that made id
}

func newClone(spec *msgSpec, template string, make func(string) (string, error)) *cloneFile {
	c := &cloneFile{make: make, template: template}
	c.msg = newMsg(spec, c.made)
	return c
}

// made is the commit of the spec: it runs under c.mu.
func (c *cloneFile) made(spec string) error {
	id, err := c.make(spec)
	if err != nil {
		c.err = err
		return err
	}
	c.id, c.wend = id, c.n
	return nil
}

func (c *cloneFile) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A spec written on this fid is made now: the reader learns its id,
	// or why it failed, rather than getting the template back.
	if err := c.msg.Sync(); err != nil {
		return 0, err
	}
	if c.id == "" && c.err != nil {
		// The spec was committed by a close (a shell's `printf ... >&3`
		// closes its dup of 3) whose error no one heard: the read of
		// the id says it.
		return 0, c.err
	}
	return cloneRead(p, off, c.id, c.wend, c.template), nil
}

func (c *cloneFile) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != "" {
		return 0, errs.E(errs.Invalid, "this open already made "+c.id+"; open new again for another")
	}
	c.err = nil
	n, err := c.msg.WriteAt(ctx, p, off)
	c.n += int64(n)
	return n, err
}

func (c *cloneFile) Sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.msg.Sync()
}

func (c *cloneFile) Close() error { return c.Sync() }

// specMsg frames a job spec (b/new, spawn): settings lines, a line ---,
// then the prompt. The settings are checked as their lines arrive.
// mcpMsg is the name of a configured MCP server.
var mcpMsg = &msgSpec{what: "MCP server name", max: 256, lines: func(done string) error { return valid.String("MCP server name", done) }}

var specMsg = &msgSpec{what: "job spec", max: maxSpec, lines: checkHead}

const jobTemplate = "agent=\nmodel=\nbackend=\ncwd=\nparallel=1\n---\nPROMPT\n"

func newJobClone(make func(string) (string, error)) *cloneFile {
	return newClone(specMsg, jobTemplate, make)
}

// checkHead fails early on NUL bytes and on settings lines that are wrong already (done
// is the complete lines received so far), so a garbled spec is reported
// on its write, not at close.
func checkHead(done string) error {
	if err := valid.String("job spec", done); err != nil {
		return err // a NUL: the framing checks UTF-8 itself
	}
	for _, line := range strings.Split(done, "\n") {
		if line == "---" {
			return nil
		}
		kv, err := parseKV(line, batch.SpecKeys)
		if err != nil {
			return errs.E(errs.Invalid, "a job spec is key=value lines, a line ---, then the prompt: "+err.Error())
		}
		if p, ok := kv["parallel"]; ok && p != "" {
			if _, err := valid.Int("parallel", p, 1, batch.MaxParallel); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxSpec bounds a job spec.
const maxSpec = 4 << 20

// cloneRead serves a read of a clone file: the template of what to write
// until something was made, then its id. The id can be read at offset 0,
// as on Plan 9, or right after the write that made it (wend), where a
// shell that opened the file read-write (exec 3<>new) reads next.
func cloneRead(p []byte, off int64, id string, wend int64, template string) int {
	text := template
	if id != "" {
		text = id + "\n"
		if off >= wend {
			off -= wend
		}
	}
	if off >= int64(len(text)) {
		return 0
	}
	return copy(p, text[off:])
}
