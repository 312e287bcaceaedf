package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"ollie.dev/ollie/internal/errs"
)

// resolve returns the model of a request. With no model given or
// configured it is the first model the server has, so that ollie with no
// configuration at all works with whatever a local Ollama has pulled.
func (b *ollamaBackend) resolve(ctx context.Context, model string) (string, error) {
	if m, err := b.model(model); err == nil {
		return m, nil
	}
	ms, err := b.Models(ctx)
	if err != nil {
		return "", err
	}
	if len(ms) == 0 {
		return "", errs.E(errs.NotExist, "backend "+b.cfg.Name+": no model given and none pulled; run ollama pull MODEL")
	}
	return ms[0].ID, nil
}

func (b *ollamaBackend) Chat(ctx context.Context, req *Request, fn func(Event) error) (*Reply, error) {
	model, err := b.resolve(ctx, req.Model)
	if err != nil {
		return nil, err
	}
	body, err := b.request(ctx, req, model)
	if err != nil {
		return nil, err
	}
	resp, err := b.call(ctx, http.MethodPost, "/api/chat", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	a := newAssembler(ctx, b.cfg.Name, req, model, fn)
	if b.local(ollamaDefaultURL) {
		a.setCost(0, CostLocal)
	}
	lr := newSSEReader(resp.Body) // used for its lines only
	lr.max = 64 << 20             // a line holds a whole tool call
	for {
		line, err := lr.readLine()
		if err == io.EOF {
			return a.partial(), streamCut(b.cfg.Name)
		}
		if err != nil {
			return a.partial(), transportError(b.cfg.Name, ctx, err)
		}
		// Text that arrived while the last piece was passed on goes on
		// as one piece (see assembler.batch).
		a.batch = lr.moreLine()
		done, err := b.line(a, line)
		if err != nil {
			return a.partial(), err
		}
		if done != "" {
			a.batch = false
			return a.finish(ollamaStop(done))
		}
	}
}

type ollamaChunk struct {
	Model           string        `json:"model"`
	Message         ollamaMessage `json:"message"`
	Done            bool          `json:"done"`
	DoneReason      string        `json:"done_reason"`
	PromptEvalCount int           `json:"prompt_eval_count"`
	EvalCount       int           `json:"eval_count"`
	Error           string        `json:"error"`
}

// line decodes one line of the stream; it returns the done reason of the
// last line.
func (b *ollamaBackend) line(a *assembler, line []byte) (string, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return "", nil
	}
	var c ollamaChunk
	if err := json.Unmarshal(line, &c); err != nil {
		return "", errs.E(errs.Unavailable, "backend "+b.cfg.Name+": bad stream line", err)
	}
	if c.Error != "" {
		return "", classify(&APIError{Backend: b.cfg.Name, Message: c.Error})
	}
	if c.Model != "" {
		a.reply.Model = c.Model
	}
	if err := a.addThinking(c.Message.Thinking); err != nil {
		return "", err
	}
	if err := a.addText(c.Message.Content); err != nil {
		return "", err
	}
	for _, tc := range c.Message.ToolCalls {
		if err := a.addCall(tc.ID, tc.Function.Name, tc.Function.Arguments); err != nil {
			return "", err
		}
	}
	if !c.Done {
		return "", nil
	}
	if c.PromptEvalCount > 0 || c.EvalCount > 0 {
		a.setUsage(Usage{Input: c.PromptEvalCount, Output: c.EvalCount})
	}
	if c.DoneReason == "" {
		c.DoneReason = "stop"
	}
	return c.DoneReason, nil
}

func ollamaStop(r string) StopReason {
	switch r {
	case "stop":
		return StopEnd
	case "length":
		return StopMaxTokens
	}
	return StopOther
}
