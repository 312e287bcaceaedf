package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/session"
)

// toolDef is execute_code as the model sees it.
var toolDef = backend.Tool{Name: "execute_code", Description: execute.Description, Schema: []byte(execute.Schema)}

// request sends the history to the model and streams the reply into chat.
// Rate limits, server errors and cut streams are retried with back-off,
// each retry a line in chat and the state "waiting"; a context overflow
// compacts the history once and retries; a model that cannot call tools
// is switched to fenced code blocks. On a stop, the partial reply is
// returned with ctx's error.
func (r *Runner) request(ctx context.Context, t *session.Turn, st *setup, msgs *[]backend.Message) (*backend.Reply, error) {
	compacted := false
	var rt retries
	for attempt := 0; ; attempt++ {
		if err := r.checkSpend(t, st); err != nil {
			return nil, err
		}
		req := r.buildRequest(st, *msgs)
		reply, err := st.be.Chat(ctx, req, streamer(t))
		if ctx.Err() == nil {
			r.health.note(st.be.Name(), err)
		}
		if err == nil {
			r.account(t, st, req, reply)
			st.lastLen = len(*msgs) // the history the reported size covers
			return reply, nil
		}
		if ctx.Err() != nil {
			t.Chat("\n")
			return interrupted(reply), ctx.Err()
		}
		switch k := errs.KindOf(err); {
		case backend.IsContextOverflow(err) && compactCut(st, *msgs) == 0:
			// Compacting would send the same request again.
			return nil, errs.E(errs.TooLarge, "the request does not fit the context window and nothing is left to compact: "+
				"the latest message alone is too large; shorten it, raise context_window, or start a new session", err)
		case backend.IsContextOverflow(err) && !compacted:
			compacted = true
			t.Chat("\n:: the context window is full; compacting\n")
			if err := r.maybeCompact(ctx, t, st, msgs, true); err != nil {
				return nil, err
			}
		case !req.Reasoning.IsZero() && backend.IsReasoningRejected(err):
			// Learned once per backend and model; the next requests
			// carry no reasoning parameter.
			r.setNoReasoning(st.be.Name(), st.model)
			t.Chat(fmt.Sprintf("\n:: %s takes no reasoning setting (%s); sending without it\n", firstOf(st.model, st.be.Name()), oneLine(err.Error())))
			t.Event("reasoning_rejected", map[string]any{"backend": st.be.Name(), "model": st.model, "error": oneLine(err.Error())})
		case k == errs.Unsupported && !st.fenced:
			r.setFenced(st.be.Name(), st.model)
			st.fenced = true
			st.system += "\n" + backend.FencedInstructions
			t.SetSystemPrompt(st.system)
			t.Chat("\n:: this model cannot call tools natively; using fenced execute_code blocks\n")
		case backend.IsUnreachable(err):
			return nil, err // nothing answers: waiting will not help
		case retryable(k) && attempt < r.o.Retries:
			if err := r.backoff(ctx, t, st, &rt, err, attempt); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
}

func retryable(k errs.Kind) bool {
	return k == errs.RateLimited || k == errs.Unavailable || k == errs.Timeout
}

// maxRetryWait caps the time one request may spend waiting to be retried.
const maxRetryWait = 5 * time.Minute

// retries is the state of one request's retries.
type retries struct {
	waited time.Duration // in total so far
	last   string        // text of the last error shown
}

// backoff waits before a retry: what the server asked for (Retry-After or
// its rate-limit reset headers), else an exponential delay. The chat says
// so in one line, the error's text only when it changed; the retry event
// carries when the wait ends, for a countdown. A wait beyond what is left
// of maxRetryWait fails the request at once.
func (r *Runner) backoff(ctx context.Context, t *session.Turn, st *setup, rt *retries, err error, attempt int) error {
	wait := r.o.RetryBase << attempt
	if ra, ok := backend.RetryAfter(err); ok {
		wait = ra
	}
	if rt.waited+wait > r.maxRetryWait() {
		return errs.E(errs.KindOf(err), fmt.Sprintf("gave up: the server asks to wait %s more, beyond the %s a request may wait",
			wait.Round(time.Second), r.maxRetryWait()), err)
	}
	rt.waited += wait
	text := oneLine(err.Error())
	until := time.Now().Add(wait)
	if text != rt.last {
		t.Chat(fmt.Sprintf("\n:: %s; retrying in %s (%d/%d)\n", text, wait.Round(time.Millisecond), attempt+1, r.o.Retries))
	} else {
		t.Chat(fmt.Sprintf("\n:: same again; retrying in %s (%d/%d)\n", wait.Round(time.Millisecond), attempt+1, r.o.Retries))
	}
	rt.last = text
	why := waitReason(errs.KindOf(err))
	t.Event("retry", map[string]any{"error": text, "reason": why, "backend": st.be.Name(), "wait_ms": wait.Milliseconds(),
		"until": until.UTC().Format(time.RFC3339Nano), "attempt": attempt + 1})
	t.SetWaiting(why, st.be.Name(), until)
	defer t.SetState(session.Running)
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitReason says in the state file why a turn waits to retry.
func waitReason(k errs.Kind) string {
	switch k {
	case errs.RateLimited:
		return "rate limited"
	case errs.Timeout:
		return "timed out"
	}
	return "server unavailable"
}

func (r *Runner) maxRetryWait() time.Duration {
	if r.o.MaxRetryWait > 0 {
		return r.o.MaxRetryWait
	}
	return maxRetryWait
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }

func (r *Runner) buildRequest(st *setup, msgs []backend.Message) *backend.Request {
	req := &backend.Request{Model: st.model, System: st.system, Messages: msgs,
		Temperature: st.agent.Temperature, MaxTokens: firstInt(st.meta.Params.MaxTokens, st.agent.MaxTokens)}
	if st.meta.Params.Temperature != nil {
		req.Temperature = st.meta.Params.Temperature
	}
	if !r.noReasoning(st.be.Name(), st.model) {
		req.Reasoning = backend.Reasoning{Effort: st.agent.Reasoning, Budget: st.agent.ReasoningBudget}
	}
	if st.fenced {
		req.Messages = fencedView(msgs)
	} else {
		req.Tools = []backend.Tool{toolDef}
	}
	if st.plan != "" && (st.step == 1 || st.step%planEvery == 0) {
		req.Messages = withNote(req.Messages, "[ollie] Your plan (s/"+st.meta.ID+"/plan):\n"+st.plan)
	}
	return req
}

// planEvery is how often, in steps, the plan is shown again within a turn.
const planEvery = 5

// withNote shows note after the last message, in this request only: it
// never enters the history, and the history's prefix stays the same from
// one request to the next, as prompt caching wants.
func withNote(msgs []backend.Message, note string) []backend.Message {
	n := len(msgs)
	if n == 0 || (msgs[n-1].Role != backend.RoleUser && msgs[n-1].Role != backend.RoleTool) {
		return msgs
	}
	out := append([]backend.Message(nil), msgs...)
	out[n-1].Text += "\n\n" + note
	return out
}

// fencedView rewrites the history for a model without tool calling: tool
// results become user messages, and consecutive user messages merge.
func fencedView(msgs []backend.Message) []backend.Message {
	out := make([]backend.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == backend.RoleTool {
			m = backend.Message{Role: backend.RoleUser, Text: "Output of execute_code (" + m.CallID + "):\n" + m.Text}
		}
		m.Calls = nil
		if n := len(out); n > 0 && out[n-1].Role == backend.RoleUser && m.Role == backend.RoleUser {
			out[n-1].Text += "\n\n" + m.Text
			continue
		}
		out = append(out, m)
	}
	return out
}

func interrupted(reply *backend.Reply) *backend.Reply {
	text := ""
	if reply != nil {
		text = strings.TrimSpace(reply.Message.Text)
	}
	if text == "" {
		text = "(interrupted)"
	} else {
		text += "\n(interrupted)"
	}
	return &backend.Reply{Message: backend.Message{Role: backend.RoleAssistant, Text: text}}
}

// account records the usage and cost of one request.
func (r *Runner) account(t *session.Turn, st *setup, req *backend.Request, reply *backend.Reply) {
	u := reply.Usage
	if u.Prompt() == 0 && u.Output == 0 {
		u = backend.Usage{Input: backend.EstimateRequest(req), Output: backend.EstimateTokens(reply.Message.Text) + len(reply.Message.Calls)*20, Estimated: true}
	}
	st.lastPrompt = u.Prompt()
	model := firstOf(reply.Model, st.model)
	cost, src := replyCost(model, u, reply)
	t.AddUsage(session.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
		Requests: 1, Estimated: u.Estimated, Cost: cost, CostKnown: src != backend.CostUnknown, Context: u.Prompt(), Window: st.window})
	source := string(src)
	if src == backend.CostUnknown {
		source = "unknown"
	}
	t.Event("cost", map[string]any{"usd": cost, "source": source, "model": model})
}

// replyCost is what a request cost: what the backend knows (a reported
// cost, or 0 for a local server) wins over the price table.
func replyCost(model string, u backend.Usage, reply *backend.Reply) (float64, backend.CostSource) {
	if reply.Priced != backend.CostUnknown {
		return reply.Cost, reply.Priced
	}
	if usd, ok := backend.Cost(model, u); ok {
		return usd, backend.CostTable
	}
	return 0, backend.CostUnknown
}

// checkSpend refuses a request once the session has spent its cap.
func (r *Runner) checkSpend(t *session.Turn, st *setup) error {
	limit := st.agent.SpendLimit
	if limit <= 0 {
		return nil
	}
	if spent := t.S.Usage().Cost; spent >= limit {
		return errs.E(errs.Permission, fmt.Sprintf("spending cap reached: $%.4f of $%.2f (spend_limit_usd in a/%s.json)", spent, limit, st.meta.Agent))
	}
	return nil
}

// consent asks in the session's ask/ directory.
type consent struct {
	t       *session.Turn
	timeout time.Duration
}

func (c *consent) Ask(ctx context.Context, req execute.Request) (execute.Decision, error) {
	ok, err := c.t.Ask(ctx, req.String(), c.timeout)
	if err != nil || !ok {
		return execute.Deny, err
	}
	return execute.Allow, nil
}

func (r *Runner) consentTimeout() time.Duration {
	if s := r.o.Config.Sandbox.ConsentTimeout; s > 0 {
		return time.Duration(s) * time.Second
	}
	return 5 * time.Minute
}
