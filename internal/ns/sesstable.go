package ns

import (
	"context"
	"fmt"
	"os"
	"strings"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
	"ollie.dev/ollie/internal/valid"
)

// sessionTable defines the files of every session directory: walk, stat,
// listing and help all come from it.
var sessionTable = []fileSpec{
	{name: "prompt", perm: 0222, mode: "w",
		doc:  "Write a prompt: one open-write-close is one prompt, however it is written. Queued if a turn runs. When the close returns it is on disk and state is no longer idle.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return newMsg(promptMsg, d.s.Submit), nil }},
	{name: "chat", perm: plan9.DMAPPEND | 0444, mode: "r", disk: true,
		doc:  "The conversation, append-only: user:, assistant:, -> tool calls, :: info, error: lines. tail -f follows it.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return openFileHandle(d.s.ChatPath()) },
		stat: func(s *session.Session, st *plan9.Dir) {
			st.Length, st.Qid.Vers = uint64(s.ChatSize()), s.ChatVersion()
			st.Mtime = activity(s)
			st.Atime = st.Mtime
		}},
	{name: "reply", perm: 0444, mode: "r",
		doc:  "The last complete assistant reply only.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text(d.s.ReplyText()) },
		size: func(d *sessionDir) (int, bool) { return d.s.PeekReplyLen() }},
	{name: "state", perm: 0444, mode: "r",
		doc: "idle, running, calling execute_code, compacting, waiting (with why and the time left), asking or error.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) {
			return text([]byte(d.s.StateText() + "\n"))
		},
		view: func(d *sessionDir) ([]byte, bool) { return []byte(string(d.s.Summary().State) + "\n"), true },
		stat: func(s *session.Session, st *plan9.Dir) { st.Qid.Vers = s.StateVersion() }},
	{name: "statewait", perm: 0444, mode: "r",
		doc:  "Blocks until the state differs from the one at open, then returns it; read again at 0 for the next change.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return statewaitHandle(d.s), nil }},
	{name: "wait", perm: 0444, mode: "r",
		doc:  "Blocks until the session is idle with an empty queue; returns the state and the last turn's error.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return waitHandle(d.s), nil }},
	{name: "events", perm: plan9.DMAPPEND | 0444, mode: "r", disk: true,
		doc: "JSON lines with a seq number: state changes, tool calls, usage, compaction, errors. Reads block at the end; tail -f follows it.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) {
			return &followHandle{s: d.s, path: d.s.EventsPath()}, nil
		},
		// Its length on disk, and an mtime that moves with it: tail -f
		// on a FUSE mount polls the size and reads when it grows.
		stat: func(s *session.Session, st *plan9.Dir) { statDisk(s.EventsPath(), st) }},
	{name: "ctl", perm: 0222, mode: "w",
		doc: "Commands, a line each, applied and answered on each write: stop kill compact clear save resume, rn NAME, model NAME, backend NAME, agent NAME.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) {
			return &ctlHandle{run: d.ctl}, nil
		}},
	{name: "cfg", perm: 0666, mode: "rw",
		doc: "key=value settings; write some to change them (state, id, name read-only).",
		open: func(d *sessionDir, mode uint8) (tree.Handle, error) {
			return newSettings(d.cfgMsg(), d.renderCfg, d.setCfg), nil
		},
		view: func(d *sessionDir) ([]byte, bool) { return d.renderCfg(), true }},
	// context grows behind a client's back: not disk, so never cached.
	{name: "context", perm: 0444, mode: "r",
		doc:  "The message history as sent to the model, JSON lines.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return openFileHandle(d.s.ContextPath()) },
		stat: func(s *session.Session, st *plan9.Dir) { statDisk(s.ContextPath(), st) }},
	{name: "systemprompt", perm: 0444, mode: "r",
		doc: "The rendered system prompt, exactly as the next request sends it: rendered at creation, after each change of settings, and at open (p/, t/, sk/, a/ may have changed).",
		openCtx: func(ctx context.Context, d *sessionDir, _ uint8) (tree.Handle, error) {
			d.parent.renderSystemPrompt(ctx, d.s)
			return text(d.s.SystemPrompt())
		},
		stat: statSystemPrompt},
	{name: "usage", perm: 0444, mode: "r",
		doc:  "Token counts: input output cache_read cache_write requests (estimated when not reported).",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text(renderUsage(d.s.Usage())) },
		view: viewUsage(renderUsage)},
	{name: "cost", perm: 0444, mode: "r",
		doc:  "USD for the last turn and the whole session.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text(renderCost(d.s.Usage())) },
		view: viewUsage(renderCost)},
	{name: "ctxsz", perm: 0444, mode: "r",
		doc:  "Context use: tokens / window (percent).",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text(renderCtxsz(d.s.Usage())) },
		view: viewUsage(renderCtxsz)},
	{name: "models", perm: 0444, mode: "r",
		doc:     "Models the session's backend offers (asked on open, never on stat).",
		openCtx: func(ctx context.Context, d *sessionDir, _ uint8) (tree.Handle, error) { return d.models(ctx) }},
	{name: "env", perm: 0666, mode: "rw",
		doc: "KEY=VALUE lines for this session's tools; KEY= removes; secret values never shown.",
		open: func(d *sessionDir, mode uint8) (tree.Handle, error) {
			return newSettings(d.envMsg(), func() []byte { return renderEnv(d.s.Env()) }, d.s.SetEnv), nil
		},
		view: func(d *sessionDir) ([]byte, bool) { return renderEnv(d.s.Env()), true }},
	{name: "fifo.in", perm: 0222, mode: "w",
		doc:  "Queue a prompt for after the current turn.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return newMsg(promptMsg, d.s.Enqueue), nil }},
	{name: "fifo.out", perm: 0444, mode: "r",
		doc:  "Consuming read: pops the next queued prompt. stat and ls do not pop.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return popHandle(d.s), nil }},
	{name: "queue", perm: 0444, mode: "r",
		doc:  "The queued prompts, one JSON string a line; reading does not pop.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text(d.s.QueueView()) },
		stat: func(s *session.Session, st *plan9.Dir) {
			size, vers := s.QueueStat()
			st.Length, st.Qid.Vers = uint64(size), vers
		}},
	{name: "plan", perm: 0666, mode: "rw", disk: true,
		doc:  "The agent's planning scratch space, kept with the session; replaced whole and atomically at close.",
		open: func(d *sessionDir, mode uint8) (tree.Handle, error) { return openPlan(d.s, mode) },
		stat: statPlan},
	{name: "offset", perm: 0444, mode: "r",
		doc:  "Byte offset in chat just after the last prompt: tail -c +$((n+1)) chat is the latest answer.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text([]byte(itoa(d.s.Offset()) + "\n")) },
		view: func(d *sessionDir) ([]byte, bool) {
			n, ok := d.s.PeekOffset()
			return []byte(itoa(n) + "\n"), ok
		}},
	{name: "prompt.prev", perm: 0444, mode: "r",
		doc:  "The last submitted prompt.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text(d.s.PrevPromptText()) },
		view: func(d *sessionDir) ([]byte, bool) { return d.s.PeekPrevPrompt() }},
	{name: "spawn", perm: 0666, mode: "rw",
		doc: "Clone file for sub-agents: a job spec as for b/new; read back the job id (b/<id>). They run under this session's sandbox policy and stop with it.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) {
			if d.parent.hooks.Spawn == nil {
				return nil, errs.E(errs.Unsupported, "sub-agents are not available here")
			}
			return newJobClone(func(text string) (string, error) { return d.parent.hooks.Spawn(d.s, text) }), nil
		}},
	{name: "mcp", perm: 0666, mode: "rw",
		doc: "Clone file for MCP servers: the name of a server in t/mcp.d/servers.json; read back its URL. One long-lived server per session and name, under this session's sandbox policy; it ends with the session, when idle, or with the daemon.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) {
			return newClone(mcpMsg, "NAME\n", func(name string) (string, error) {
				if d.parent.hooks.MCP == nil {
					// A sub-agent's, or a daemon without them: t/mcp
					// starts a server per call instead.
					return "", errs.E(errs.Unsupported, "long-lived MCP servers are not available here")
				}
				return d.parent.hooks.MCP(d.s, name)
			}), nil
		}},
	{name: "tail", perm: 0555, mode: "r, exec",
		doc:  "A script: tail -f of this session's chat.",
		open: func(d *sessionDir, _ uint8) (tree.Handle, error) { return text(tailScript) },
		view: func(d *sessionDir) ([]byte, bool) { return tailScript, true }},
}

var tailScript = []byte("#!/bin/sh\n# Follow this session's chat.\nexec tail -n +1 -f \"$(dirname \"$0\")/chat\"\n")

// renderCfg shows the settings, with the model and backend in use where
// none is set (as s/idx does): what the next request goes to.
func (d *sessionDir) renderCfg() []byte {
	kv := d.s.Cfg()
	if d.parent.hooks.InUse != nil {
		be, model := d.parent.hooks.InUse(d.s.Summary().Meta)
		for i := range kv {
			switch {
			case kv[i][0] == "backend" && kv[i][1] == "":
				kv[i][1] = be
			case kv[i][0] == "model" && kv[i][1] == "":
				kv[i][1] = model
			}
		}
	}
	return renderKV(kv)
}

// viewUsage renders a file of the usage for stat.
func viewUsage(render func(session.Usage) []byte) func(d *sessionDir) ([]byte, bool) {
	return func(d *sessionDir) ([]byte, bool) {
		u, ok := d.s.PeekUsage()
		return render(u), ok
	}
}

// statSystemPrompt gives the size and version of the system prompt in
// memory, or of the file when there is none.
func statSystemPrompt(s *session.Session, st *plan9.Dir) {
	size, vers, mtime, ok := s.SystemPromptStat()
	if !ok {
		statDisk(s.SystemPromptPath(), st)
		return
	}
	st.Length, st.Qid.Vers = uint64(size), vers
	st.Mtime = uint32(mtime.Unix())
	st.Atime = st.Mtime
}

// statDisk gives st the length and mtime of a file the session keeps on
// disk, and a version that moves with them.
func statDisk(path string, st *plan9.Dir) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	st.Length = uint64(fi.Size())
	x := uint64(fi.ModTime().UnixNano()) ^ uint64(fi.Size())*0x9E3779B97F4A7C15
	st.Qid.Vers = uint32(x ^ x>>32)
	st.Mtime = uint32(fi.ModTime().Unix())
	st.Atime = st.Mtime
}

func (d *sessionDir) setCfg(data []byte) error {
	if err := valid.Text("cfg", data); err != nil {
		return err
	}
	kv, err := parseKV(string(data), session.CfgKeys)
	if err != nil {
		return err
	}
	if err := d.s.SetCfg(kv); err != nil {
		return err
	}
	d.parent.renderSystemPrompt(context.Background(), d.s)
	return nil
}

// models asks the backend with the open's context, so that a flush of
// the open (Ctrl-C of the reader) cancels the request.
func (d *sessionDir) models(ctx context.Context) (tree.Handle, error) {
	if d.parent.hooks.Models == nil {
		return text(nil)
	}
	ms, err := d.parent.hooks.Models(ctx, d.s)
	if err != nil {
		return nil, err
	}
	return text([]byte(strings.Join(ms, "\n") + "\n"))
}

func renderUsage(u session.Usage) []byte {
	s := fmt.Sprintf("input %d\noutput %d\ncache_read %d\ncache_write %d\nrequests %d\n", u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Requests)
	if u.Estimated {
		s += "estimated\n"
	}
	return []byte(s)
}

func renderCost(u session.Usage) []byte {
	if !u.CostKnown && u.Cost == 0 {
		return []byte("turn 0\nsession 0\n(no price known for this model)\n")
	}
	if u.Cost == 0 {
		// Known to be free: a local Ollama, or a free model the backend
		// reported as costing nothing.
		return []byte("turn 0\nsession 0\n(free: a local model or one the backend reports as free)\n")
	}
	return []byte(fmt.Sprintf("turn %.6f\nsession %.6f\n", u.TurnCost, u.Cost))
}

func renderCtxsz(u session.Usage) []byte {
	if u.Window == 0 {
		return []byte(fmt.Sprintf("%d / unknown\n", u.Context))
	}
	return []byte(fmt.Sprintf("%d / %d (%d%%)\n", u.Context, u.Window, u.Context*100/u.Window))
}

func renderEnv(vars []session.EnvVar) []byte {
	var b strings.Builder
	for _, v := range vars {
		if v.Secret {
			fmt.Fprintf(&b, "%s=(secret)\n", v.Key)
		} else {
			fmt.Fprintf(&b, "%s=%s\n", v.Key, v.Value)
		}
	}
	return []byte(b.String())
}

// popHandle pops a queued prompt at the first read, never at open or stat.
func popHandle(s *session.Session) tree.Handle {
	var popped []byte
	done := false
	return &answerHandle{ask: func(ctx context.Context) ([]byte, error) {
		if done {
			return popped, nil
		}
		p, ok, err := s.Pop()
		if err != nil {
			return nil, err
		}
		done = true
		if ok {
			popped = []byte(p)
		}
		return popped, nil
	}}
}
