package backend

import (
	"context"

	"ollie.dev/ollie/internal/redact"
)

// Redacting returns b with r applied to every error it returns: a server
// may echo the request (its key header included) in an error body, and a
// transport error may quote the URL. Errors keep their chain, so Kinds,
// Retry-After and context overflow read as before.
func Redacting(b Backend, r *redact.Redactor) Backend {
	if r == nil {
		return b
	}
	return &redacting{Backend: b, r: r}
}

type redacting struct {
	Backend
	r *redact.Redactor
}

func (x *redacting) Chat(ctx context.Context, req *Request, fn func(Event) error) (*Reply, error) {
	rep, err := x.Backend.Chat(ctx, req, fn)
	return rep, x.r.Error(err)
}

func (x *redacting) Models(ctx context.Context) ([]Model, error) {
	ms, err := x.Backend.Models(ctx)
	return ms, x.r.Error(err)
}

func (x *redacting) ContextWindow(ctx context.Context, model string) (int, error) {
	n, err := x.Backend.ContextWindow(ctx, model)
	return n, x.r.Error(err)
}
