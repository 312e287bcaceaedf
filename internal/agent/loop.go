package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"ollie.dev/ollie/internal/agentcfg"
	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/session"
)

// stepLimitNote asks for the summary that ends a turn at its step limit.
const stepLimitNote = "[ollie] You have used all %d steps of this turn. Do not call any tool now. " +
	"Summarize what you did, what you found, and what is left to do."

// Run runs one turn (session.Runner).
func (r *Runner) Run(ctx context.Context, t *session.Turn) error {
	st, err := r.setup(ctx, t)
	if err != nil {
		return err
	}
	alone := r.running.Add(1) == 1
	defer r.running.Add(-1)
	if t.S.FirstTurn() && alone {
		// Not waited for: a turn the model answers without a tool ends
		// as soon as it has. Its tmp is not mounted once the session is
		// gone or the daemon stopping (Session.EnsureTmp).
		go r.warmStage(t.S, st)
	}
	if err := t.SetSystemPrompt(st.system); err != nil {
		return err
	}
	t.StartTurnCost()
	msgs, err := r.history(t)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return errs.E(errs.Invalid, "nothing to answer: the history is empty")
	}
	if msgs, err = answerCutCalls(t, msgs); err != nil {
		return err
	}
	if err := r.beforeTurn(ctx, t, st, msgs); err != nil {
		r.hook(ctx, t, st, "turnError", map[string]any{"error": err.Error()})
		return err
	}
	msgs, err = r.steps(ctx, t, st, msgs)
	if err == nil {
		r.remember(t, msgs)
	} else {
		r.forget(t.S.ID())
	}
	if err != nil && ctx.Err() == nil {
		r.hook(ctx, t, st, "turnError", map[string]any{"error": err.Error()})
		return err
	}
	if err == nil {
		reply := string(t.S.ReplyText())
		if h := r.hook(ctx, t, st, "postTurn", map[string]any{"prompt": t.Prompt, "reply": reply}); h.blocked && strings.TrimSpace(h.stdout) != "" {
			if err := t.S.Enqueue(h.stdout); err != nil {
				t.Chat(":: postTurn hook: the next prompt was refused: " + err.Error() + "\n")
			}
		}
	}
	return err
}

// beforeTurn runs the agentSpawn (first turn only) and preTurn hooks.
func (r *Runner) beforeTurn(ctx context.Context, t *session.Turn, st *setup, msgs []backend.Message) error {
	if len(msgs) == 1 {
		if h := r.hook(ctx, t, st, "agentSpawn", map[string]any{"prompt": t.Prompt}); h.blocked {
			return errs.E(errs.Permission, "agentSpawn hook: "+h.reason)
		}
	}
	if h := r.hook(ctx, t, st, "preTurn", map[string]any{"prompt": t.Prompt, "resume": t.Resume}); h.blocked {
		return errs.E(errs.Permission, "preTurn hook: "+h.reason)
	}
	return nil
}

// steps runs the model and its tool calls until the turn is over.
func (r *Runner) steps(ctx context.Context, t *session.Turn, st *setup, msgs []backend.Message) ([]backend.Message, error) {
	for step := 1; ; step++ {
		st.step, st.plan = step, strings.TrimSpace(string(t.S.Plan()))
		last := step > st.maxStep
		if last {
			note := backend.Message{Role: backend.RoleUser, Text: fmt.Sprintf(stepLimitNote, st.maxStep)}
			msgs = append(msgs, note)
			t.Append(note)
			t.Chat(fmt.Sprintf(":: step limit (%d) reached; asking for a summary\n", st.maxStep))
		}
		if err := r.maybeCompact(ctx, t, st, &msgs, false); err != nil {
			return msgs, err
		}
		reply, err := r.request(ctx, t, st, &msgs)
		if err == nil && r.mayContinue(st, reply) {
			reply, err = r.continueCut(ctx, t, st, msgs, reply)
		}
		if reply != nil && (err == nil || ctx.Err() != nil) {
			msgs = append(msgs, reply.Message)
			t.Append(reply.Message)
		}
		if err != nil {
			return msgs, err
		}
		calls := reply.Message.Calls
		if st.fenced {
			calls, _ = backend.ParseFencedToolCalls(reply.Message.Text)
		}
		if text, done := r.stopNote(t, st, &msgs, reply, calls); done {
			return msgs, t.SetReply(text)
		}
		if len(calls) == 0 || last {
			text := finalText(reply.Message.Text)
			if len(calls) > 0 {
				msgs = r.skipCalls(t, msgs, calls, "not run: the step limit was reached")
				if text == "" {
					text = fmt.Sprintf("(stopped at the step limit of %d steps; the model gave no summary)\n", st.maxStep)
					t.Chat(":: " + text)
				}
			}
			return msgs, t.SetReply(text)
		}
		msgs, err = r.runCalls(ctx, t, st, msgs, calls)
		if err != nil {
			return msgs, err
		}
	}
}

func finalText(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return s + "\n"
}

// runCalls runs the calls in the order the model gave them and appends a
// result for each. If the turn is stopped midway, the calls not run get a
// result saying so, so the history stays one the next request accepts.
func (r *Runner) runCalls(ctx context.Context, t *session.Turn, st *setup, msgs []backend.Message, calls []backend.ToolCall) ([]backend.Message, error) {
	for i, c := range calls {
		if ctx.Err() != nil {
			return r.skipCalls(t, msgs, calls[i:], "not run: the turn was stopped"), ctx.Err()
		}
		text, failed := r.call(ctx, t, st, c)
		res := backend.Message{Role: backend.RoleTool, CallID: c.ID, Text: text, Error: failed}
		msgs = append(msgs, res)
		if err := t.Append(res); err != nil {
			return msgs, err
		}
	}
	t.SetState(session.Running)
	return msgs, ctx.Err()
}

func (r *Runner) skipCalls(t *session.Turn, msgs []backend.Message, calls []backend.ToolCall, why string) []backend.Message {
	for _, c := range calls {
		res := backend.Message{Role: backend.RoleTool, CallID: c.ID, Text: why, Error: true}
		msgs = append(msgs, res)
		t.Append(res)
	}
	return msgs
}

// call runs one tool call and returns what the model reads.
func (r *Runner) call(ctx context.Context, t *session.Turn, st *setup, c backend.ToolCall) (string, bool) {
	t.Chat("-> " + c.Name + "(" + shorten(compactJSON(c.Args), 400) + ")\n")
	if c.Name != "execute_code" {
		// Every call has its start and end events, even one that cannot run.
		msg := "error: unknown tool " + c.Name + "; the only tool is execute_code"
		t.Event("tool_start", map[string]any{"id": c.ID, "tool": c.Name})
		t.Event("tool_end", map[string]any{"id": c.ID, "tool": c.Name, "error": msg, "failed": true})
		t.Chat(msg + "\n")
		return msg, true
	}
	if h := r.hook(ctx, t, st, "preTool", map[string]any{"tool": c.Name, "args": c.Args}); h.blocked {
		msg := "error: blocked by the preTool hook: " + h.reason
		t.Event("tool_start", map[string]any{"id": c.ID, "tool": c.Name})
		t.Event("tool_end", map[string]any{"id": c.ID, "tool": c.Name, "error": msg, "failed": true})
		t.Chat(msg + "\n")
		return msg, true
	}
	t.SetState(session.CallingTool)
	t.Event("tool_start", map[string]any{"id": c.ID, "tool": c.Name})
	res, err := r.execute(ctx, t, st, c.Args)
	data := map[string]any{"id": c.ID, "tool": c.Name}
	var text string
	failed := false
	switch {
	case err != nil && res == nil:
		text, failed = "error: "+err.Error(), true
		data["error"] = err.Error()
	default:
		text, failed = res.String(), res.Failed
		data["ms"], data["exit_code"], data["failed"] = res.Duration.Milliseconds(), res.ExitCode, res.Failed
		if err != nil {
			text += "(interrupted: the turn was stopped)\n"
			failed = true
		}
	}
	t.Event("tool_end", data)
	if h := r.hook(ctx, t, st, "postTool", map[string]any{"tool": c.Name, "args": c.Args, "result": text, "failed": failed}); h.stdout != "" {
		text += h.stdout
	}
	t.Chat(indentOutput(text))
	return text, failed
}

func (r *Runner) execute(ctx context.Context, t *session.Turn, st *setup, args json.RawMessage) (*execute.Result, error) {
	if r.o.Exec == nil {
		return nil, errs.E(errs.Unavailable, "execute_code is not available in this daemon")
	}
	spec, err := r.stageSpec(t.S, st.meta, st.agent)
	if err != nil {
		return nil, err
	}
	spec.Consent = &consent{t: t, timeout: r.consentTimeout()}
	return r.o.Exec.Run(ctx, spec, args)
}

// warmStage prepares, in the background, the sandbox of the session's
// tools (Executor.Warm), while its first request of the daemon's life is
// with the model: the model usually answers with a call, and the call
// then finds the ruleset of a policy it would have built. It does what a
// call would do before its first stage, no more; a failure is the call's
// to report. Run calls it only when no other turn is running: it uses
// the CPU while the turn waits, which other turns would be using (under
// the load of hundreds of new sessions at once, warming each took 1.6 times
// the CPU per turn, its rulesets pushing others' out of the cache before
// their calls came).
func (r *Runner) warmStage(s session.Handle, st *setup) {
	w, ok := r.o.Exec.(interface{ Warm(execute.Spec) error })
	if !ok {
		return
	}
	spec, err := r.stageSpec(s, st.meta, st.agent)
	if err != nil {
		return
	}
	w.Warm(spec)
}

// stageSpec is what a stage of session s runs under: its cwd, tmp, env,
// sandbox policy and the parts of the tree it is granted.
func (r *Runner) stageSpec(s session.Handle, m session.Meta, a *agentcfg.Agent) (execute.Spec, error) {
	env := ToolEnv(r.o.Mount, s.TreePath(), m.ID)
	for _, v := range s.Env() {
		env = append(env, v.Key+"="+v.Value)
	}
	// The session's, else its agent's, else ollie.json's sandbox.default.
	policy := firstOf(m.Sandbox, a.Sandbox, r.o.Config.Sandbox.Default)
	tmp, err := s.EnsureTmp()
	if err != nil {
		return execute.Spec{}, err
	}
	spec := execute.Spec{
		Cwd: m.Cwd, Tmp: tmp, Tools: r.o.Config.ConfigDir + "/t", Env: env,
		Policy: policy, Session: m.ID,
	}
	spec.Read, spec.Write = TreeGrants(r.o.Config.Sandbox, r.o.Mount, policy, s.TreePath())
	return spec, nil
}

// StageSpec is the spec session s's next stage would run under; its
// consent is nil (a process started under it is never elevated).
func (r *Runner) StageSpec(s *session.Session) (execute.Spec, error) {
	m := s.Summary().Meta
	a, err := r.loadAgent(m.Agent)
	if err != nil {
		return execute.Spec{}, err
	}
	return r.stageSpec(s, m, a)
}

// StartMCP starts the MCP bridge with args under spec, for as long as
// the caller wants it (execute.Executor.StartMCP).
func (r *Runner) StartMCP(spec execute.Spec, args []string, stdout, stderr *os.File) (*execute.Long, error) {
	e, ok := r.o.Exec.(interface {
		StartMCP(execute.Spec, []string, *os.File, *os.File) (*execute.Long, error)
	})
	if !ok {
		return nil, errs.E(errs.Unavailable, "this daemon runs no long-lived processes")
	}
	return e.StartMCP(spec, args, stdout, stderr)
}

// ToolEnv is what a session's tools learn of the tree: OLLIE_ID, and,
// when the tree is mounted at mount, OLLIE and OLLIE_SESSION, the
// session's own directory (dir, relative to the tree: s/<id>, or
// b/<job>/<k> for a sub-agent).
func ToolEnv(mount, dir, id string) []string {
	env := []string{"OLLIE_ID=" + id}
	if mount != "" {
		env = append(env, "OLLIE="+mount, "OLLIE_SESSION="+mount+"/"+dir)
	}
	return env
}

// TreeGrants opens the tree mounted at mount to the tools of the session
// whose directory is dir: all of it to read, and, when the profile lets
// the session write its cwd, its memory (m/), the shared tmp/ and its
// own directory (plan, spawn of sub-agents ...) to write.
//
// This is the outer fence, in Landlock's terms of paths. What a stage may
// really do in the tree is the daemon's stage table (internal/ns,
// stage.go), which the daemon applies to every request of a stage by
// who is asking: an ask/ file, cfg, ctl or another session's queue under
// a granted path are still refused.
func TreeGrants(sb config.Sandbox, mount, policy, dir string) (read, write []string) {
	if mount == "" {
		return nil, nil
	}
	read = []string{mount}
	prof, err := sb.Profile(policy)
	if err != nil || prof.Cwd != config.AccessRW {
		return read, nil
	}
	return read, []string{mount + "/m", mount + "/tmp", mount + "/" + dir}
}

// indentOutput shows a tool's output in chat, cut to a readable size (the
// model gets all of it), with control characters made visible: chat is
// read in terminals (cat, tail -f), and what a tool printed must not
// drive them.
func indentOutput(s string) string {
	const max = 2000
	if len(s) > max {
		s = s[:max] + fmt.Sprintf("\n... (%d more bytes)\n", len(s)-max)
	}
	s = EscapeControls(s)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// EscapeControls writes the control characters of s but newline and tab
// (C0, DEL and C1, escape sequences among them) as \xHH or \u00HH, and
// invalid UTF-8 as \xHH, so that text from tools is inert in a terminal.
func EscapeControls(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (isControl(r) && r != '\n' && r != '\t') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
