package agent

import (
	"context"

	"ollie.dev/ollie/internal/session"
)

// SystemPrompt renders the system prompt the next turn of s will send and
// records it in s, so that s/<id>/systemprompt is true before the first
// turn and after each change of settings, p/, t/, sk/ or a/. It is the
// turn's own composition (setup, compose), without the network: the model
// is the one InUse names, where a turn might first ask the backend.
func (r *Runner) SystemPrompt(ctx context.Context, s *session.Session) error {
	meta, vers := s.SettingsVersion()
	a, err := r.loadAgent(meta.Agent)
	if err != nil {
		return err
	}
	be, err := r.backend(meta.Backend, a.Backend)
	if err != nil {
		return err
	}
	st := &setup{agent: a, meta: meta, be: be}
	_, st.model = r.InUse(meta)
	st.fenced = r.isFenced(be.Name(), st.model)
	text, err := r.compose(ctx, a, meta, st)
	if err != nil {
		return err
	}
	return s.SetSystemPrompt(text, vers)
}
