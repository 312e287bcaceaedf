package agent

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/session"
)

// Reasoning is shown in chat between these marks, on lines of their own,
// so that readers of chat can skip it; it never enters reply, which holds
// only the answer.
const (
	thinkOpen  = "<think>\n"
	thinkClose = "</think>\n"
)

// chatStream writes one reply into chat as it arrives: reasoning between
// think marks, then "assistant: " and the answer. Each piece of reasoning
// is also an event once it is complete.
type chatStream struct {
	t        *session.Turn
	started  bool // "assistant: " written
	thinking bool // inside a think block
	nl       bool // chat ends with a newline
	reason   strings.Builder
}

func streamer(t *session.Turn) func(backend.Event) error {
	c := &chatStream{t: t, nl: true}
	return c.event
}

func (c *chatStream) event(ev backend.Event) error {
	switch ev.Kind {
	case backend.EventThinking:
		if ev.Text == "" {
			return nil
		}
		if !c.thinking {
			c.newline()
			c.t.Chat(thinkOpen)
			c.thinking, c.nl = true, true
		}
		c.reason.WriteString(ev.Text)
		c.write(ev.Text)
	case backend.EventText, backend.EventRefusal:
		if ev.Text == "" {
			return nil
		}
		c.endThinking()
		if !c.started {
			c.newline()
			c.t.Chat("assistant: ")
			c.started = true
		}
		c.write(ev.Text)
	case backend.EventToolCall, backend.EventUsage:
		c.endThinking()
		c.newline()
	}
	return nil
}

func (c *chatStream) write(s string) {
	c.t.Chat(s)
	c.nl = strings.HasSuffix(s, "\n")
}

func (c *chatStream) newline() {
	if !c.nl {
		c.t.Chat("\n")
		c.nl = true
	}
}

// endThinking closes a think block and records its text as an event.
func (c *chatStream) endThinking() {
	if !c.thinking {
		return
	}
	c.newline()
	c.t.Chat(thinkClose)
	c.thinking = false
	text := c.reason.String()
	c.reason.Reset()
	c.t.Event("reasoning", map[string]any{"text": text, "chars": len(text)})
}

// stopNote handles a reply that did not end normally. A reply cut at the
// output limit has its tool calls answered as not run (their arguments
// may be cut too) and the cut said in chat; a refusal is said in chat.
// It returns the reply text for s/reply and whether the turn ends here.
func (r *Runner) stopNote(t *session.Turn, st *setup, msgs *[]backend.Message, reply *backend.Reply, calls []backend.ToolCall) (string, bool) {
	text := finalText(reply.Message.Text)
	switch {
	case reply.Stop == backend.StopMaxTokens:
		limit := "the server's default"
		if n := firstInt(st.meta.Params.MaxTokens, st.agent.MaxTokens); n > 0 {
			limit = fmt.Sprint(n)
		}
		what := "the reply may be incomplete"
		if len(calls) > 0 {
			*msgs = r.skipCalls(t, *msgs, calls, "not run: the reply was cut at max_tokens before the call was complete")
			what = fmt.Sprintf("its %d tool call(s) were not run", len(calls))
		}
		t.Chat(fmt.Sprintf(":: reply cut at max_tokens (%s, %d output tokens); %s; raise max_tokens in s/%s/cfg or a/%s.json\n",
			limit, reply.Usage.Output, what, st.meta.ID, st.meta.Agent))
		t.Event("truncated", map[string]any{"stop": string(reply.Stop), "max_tokens": limit, "output": reply.Usage.Output, "calls_not_run": len(calls)})
		return text, true
	case reply.Message.Refused:
		if len(calls) > 0 {
			*msgs = r.skipCalls(t, *msgs, calls, "not run: the model refused")
		}
		t.Chat(":: the model refused\n")
		t.Event("refusal", map[string]any{"text": reply.Message.Text})
		return strings.TrimSpace("(refused) "+text) + "\n", true
	}
	return text, false
}

// continueNote asks an API without prefill (OpenAI chat completions) to
// go on with a reply cut at the output limit.
const continueNote = "[ollie] Your last reply was cut at the output limit. Continue it exactly where it stopped, " +
	"without repeating anything and without any preamble."

// mayContinue reports whether a reply cut at max_tokens is continued: only
// a reply of text (a cut tool call must never run, nor be completed by
// guess), and not on Anthropic with thinking on, which refuses a prefill.
func (r *Runner) mayContinue(st *setup, reply *backend.Reply) bool {
	if reply.Stop != backend.StopMaxTokens || len(reply.Message.Calls) > 0 || strings.TrimSpace(reply.Message.Text) == "" {
		return false
	}
	if st.fenced {
		if calls, _ := backend.ParseFencedToolCalls(reply.Message.Text); len(calls) > 0 {
			return false
		}
	}
	if st.be.Kind() == config.KindAnthropic && st.agent.Reasoning != "off" && (st.agent.Reasoning != "" || st.agent.ReasoningBudget > 0) {
		return false
	}
	return true
}

// continueCut asks once for the rest of a reply cut at max_tokens. Where
// the API continues an assistant message given last (Anthropic, Ollama),
// the cut text is sent as that prefill; OpenAI gets it as a finished
// message and a note asking to go on. Neither enters the history: the
// reply returned is the cut text and its continuation as one message,
// with the usage of both; its Stop is the continuation's, so a second
// cut is said as usual.
func (r *Runner) continueCut(ctx context.Context, t *session.Turn, st *setup, msgs []backend.Message, cut *backend.Reply) (*backend.Reply, error) {
	prefix := cut.Message.Text
	if st.be.Kind() == config.KindAnthropic {
		// The API refuses a final assistant message ending in white space.
		prefix = strings.TrimRightFunc(prefix, unicode.IsSpace)
	}
	partial := cut.Message
	partial.Text = prefix
	cont := append(append([]backend.Message(nil), msgs...), partial)
	if st.be.Kind() == config.KindOpenAI {
		cont = append(cont, backend.Message{Role: backend.RoleUser, Text: continueNote})
	}
	// The stream ended well, so chat ends with a newline (EventUsage).
	t.Chat(fmt.Sprintf(":: reply cut at max_tokens (%d output tokens); asking once for the rest\n", cut.Usage.Output))
	t.Event("continued", map[string]any{"output": cut.Usage.Output, "chars": len(prefix)})
	reply, err := r.request(ctx, t, st, &cont)
	switch {
	case err != nil && ctx.Err() != nil:
		if reply != nil {
			reply.Message.Text = prefix + "\n" + reply.Message.Text
		}
		return reply, err
	case err != nil:
		// The cut reply stands, and is said to be cut.
		t.Chat(":: the rest could not be had: " + oneLine(err.Error()) + "\n")
		return cut, nil
	}
	out := *reply
	out.Message.Text = prefix + reply.Message.Text
	out.Message.Thinking = append(append([]backend.Thinking(nil), cut.Message.Thinking...), reply.Message.Thinking...)
	out.Message.Refused = cut.Message.Refused || reply.Message.Refused
	out.Usage.Add(cut.Usage)
	return &out, nil
}
