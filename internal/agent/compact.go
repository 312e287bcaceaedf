package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/session"
)

const summarySystem = `You summarize the work of an AI agent so that it can continue without the
full history. Keep every fact it will need: the task, decisions and why, files and commands
touched, results found, errors met, and what remains. Be concise; use short bullet points.`

// Compact summarizes the history now (session.Runner, for ctl compact).
func (r *Runner) Compact(ctx context.Context, t *session.Turn) error {
	st, err := r.setup(ctx, t)
	if err != nil {
		return err
	}
	msgs, err := r.history(t)
	if err != nil {
		return err
	}
	if len(msgs) < 3 {
		t.Chat(":: nothing to compact\n")
		return nil
	}
	return r.maybeCompact(ctx, t, st, &msgs, true)
}

// maybeCompact replaces the older part of the history with a summary when
// the next request would fill more than the agent's compact_at share of
// the window (or always, with force). The latest messages are kept
// verbatim, the current task is restated after the summary, and the
// whole history before compaction stays on disk in history/.
func (r *Runner) maybeCompact(ctx context.Context, t *session.Turn, st *setup, msgs *[]backend.Message, force bool) error {
	est := r.estimate(st, *msgs)
	at := st.agent.CompactAt
	if at == 0 {
		at = 0.8
	}
	if !force && (st.window == 0 || float64(est) < at*float64(st.window)) {
		return nil
	}
	cut := compactCut(st, *msgs)
	if cut == 0 {
		return nil // nothing older than what must be kept
	}
	if h := r.hook(ctx, t, st, "preCompact", map[string]any{"messages": len(*msgs), "tokens": est}); h.blocked {
		return nil
	}
	t.SetState(session.Compacting)
	defer t.SetState(session.Running)
	summary, err := r.summarize(ctx, t, st, (*msgs)[:cut])
	if err != nil {
		return errs.E(errs.KindOf(err), "compaction", err)
	}
	task := lastPrompt(*msgs)
	head := backend.Message{Role: backend.RoleUser, Text: "[ollie] Summary of the conversation so far " +
		"(the full history is kept on disk):\n\n" + strings.TrimSpace(summary) + "\n\nThe current task: " + task}
	kept := (*msgs)[cut:]
	next := []backend.Message{head}
	if kept[0].Role == backend.RoleUser {
		next[0].Text += "\n\n" + kept[0].Text
		kept = kept[1:]
	}
	next = append(next, kept...)
	raw := make([]json.RawMessage, len(next))
	for i, m := range next {
		raw[i], _ = json.Marshal(m)
	}
	note := fmt.Sprintf("summarized %d messages (~%d tokens); kept the latest %d verbatim", cut, est-backend.EstimateRequest(&backend.Request{Messages: (*msgs)[cut:]}), len(*msgs)-cut)
	if err := t.ReplaceHistory(raw, note); err != nil {
		return err
	}
	*msgs = next
	st.lastPrompt = 0 // the history changed: estimate it whole next time
	r.hook(ctx, t, st, "postCompact", map[string]any{"messages": len(next), "note": note})
	return nil
}

// compactCut is where compaction would cut the history: the messages
// before it are summarized. 0 means there is nothing to summarize.
func compactCut(st *setup, msgs []backend.Message) int {
	keepBudget := backend.EstimateRequest(&backend.Request{Messages: msgs}) / 3
	if st.window > 0 {
		keepBudget = min(keepBudget, st.window/4)
	}
	return cutPoint(msgs, keepBudget)
}

// estimate is the size of the next request: what the last one reported it
// took, plus an estimate of the messages added since (tool results, the
// reply); the whole request is estimated only when nothing was reported
// yet in this turn. Tokenizing the whole history at every step costs more
// than the step itself.
func (r *Runner) estimate(st *setup, msgs []backend.Message) int {
	if st.lastPrompt > 0 && st.lastLen <= len(msgs) {
		n := st.lastPrompt
		for i := range msgs[st.lastLen:] {
			m := &msgs[st.lastLen+i]
			n += 4 + backend.EstimateTokens(m.Text)
			for _, c := range m.Calls {
				n += backend.EstimateTokens(string(c.Args))
			}
		}
		return n
	}
	return backend.EstimateRequest(r.buildRequest(st, msgs))
}

// cutPoint returns the index from which the history is kept verbatim:
// the earliest start of a user or assistant message whose suffix fits in
// budget tokens (at least the last such message). 0 means nothing can be
// summarized. A cut inside the current turn is fine: the summary restates
// the task.
func cutPoint(msgs []backend.Message, budget int) int {
	best, size := len(msgs), 0
	for i := len(msgs) - 1; i > 0; i-- {
		size += 4 + backend.EstimateTokens(msgs[i].Text)
		for _, c := range msgs[i].Calls {
			size += backend.EstimateTokens(string(c.Args))
		}
		if size > budget && best < len(msgs) {
			break
		}
		if msgs[i].Role == backend.RoleUser || msgs[i].Role == backend.RoleAssistant {
			best = i
		}
	}
	if best >= len(msgs) {
		return 0
	}
	return best
}

func lastPrompt(msgs []backend.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == backend.RoleUser && !strings.HasPrefix(msgs[i].Text, "[ollie]") {
			return msgs[i].Text
		}
	}
	return "(none)"
}

// summarize asks the model for a summary of msgs, shown as a transcript.
func (r *Runner) summarize(ctx context.Context, t *session.Turn, st *setup, msgs []backend.Message) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case backend.RoleTool:
			fmt.Fprintf(&b, "tool output:\n%s\n", shorten(m.Text, 2000))
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Text)
		}
		for _, c := range m.Calls {
			fmt.Fprintf(&b, "-> %s(%s)\n", c.Name, shorten(compactJSON(c.Args), 1000))
		}
	}
	text := b.String()
	if st.window > 0 && backend.EstimateTokens(text) > st.window*6/10 {
		keep := st.window * 6 / 10 * 3 // about three characters a token
		text = "(earliest part omitted)\n" + text[len(text)-min(keep, len(text)):]
	}
	req := &backend.Request{Model: st.model, System: summarySystem, Messages: []backend.Message{{
		Role: backend.RoleUser, Text: "Summarize this conversation between a user and an agent:\n\n" + text}}}
	reply, err := st.be.Chat(ctx, req, nil)
	if err != nil {
		return "", err
	}
	r.account(t, st, req, reply)
	return reply.Message.Text, nil
}
