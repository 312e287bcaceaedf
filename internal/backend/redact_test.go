package backend_test

import (
	"context"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/redact"
)

// TestEchoedKeyRedacted: a server echoes the request's headers in its
// errors. Every backend kind, wrapped by Redacting, returns an error of
// the same Kind whose text holds no key.
func TestEchoedKeyRedacted(t *testing.T) {
	eachKind(t, func(t *testing.T, kind string) {
		b, srv := newPair(t, kind, &llmtest.Script{Default: &llmtest.Turn{EchoHeaders: true}, EchoModels: true})
		b = backend.Redacting(b, redact.New(testKey))
		_, _, chatErr := collect(t, b, &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}})
		_, modelsErr := b.Models(context.Background())
		echoes := srv.Echoes()
		if len(echoes) < 2 || !strings.Contains(strings.Join(echoes, ""), testKey) {
			t.Fatalf("the server did not echo the key: %q", echoes)
		}
		for name, err := range map[string]error{"chat": chatErr, "models": modelsErr} {
			if err == nil || !errs.Is(err, errs.Invalid) {
				t.Fatalf("%s: error %v (kind %v), want kind %v", name, err, errs.KindOf(err), errs.Invalid)
			}
			if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), redact.Marker) {
				t.Errorf("%s: error %q", name, err)
			}
		}
	})
}
