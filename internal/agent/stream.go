package agent

import (
	"fmt"
	"strings"

	"ollie.dev/ollie/internal/backend"
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
