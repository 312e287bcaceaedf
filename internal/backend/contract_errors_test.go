package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/backend"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/llmtest"
)

func TestContractErrors(t *testing.T) {
	long := strings.Repeat("word ", 40)
	cases := []struct {
		name string
		turn llmtest.Turn
		kind errs.Kind
	}{
		{"rate limit", llmtest.Turn{Status: 429, RetryAfter: 7}, errs.RateLimited},
		{"server error", llmtest.Turn{Status: 500}, errs.Unavailable},
		{"overloaded", llmtest.Turn{Status: 503}, errs.Unavailable},
		{"cut stream", llmtest.Turn{Text: long, CutAfter: 4}, errs.Unavailable},
		{"error event", llmtest.Turn{Text: long, FailAfter: 4}, errs.Unavailable},
		{"overflow", llmtest.Turn{Overflow: true}, errs.TooLarge},
		{"bad request", llmtest.Turn{Status: 400}, errs.Invalid},
		{"key revoked", llmtest.Turn{Status: 401}, errs.Permission},
	}
	eachKind(t, func(t *testing.T, kind string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				b, srv := newPair(t, kind, &llmtest.Script{Turns: []llmtest.Turn{c.turn}})
				_, r, err := collect(t, b, &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}})
				if !errs.Is(err, c.kind) {
					t.Fatalf("error %v (kind %v), want kind %v", err, errs.KindOf(err), c.kind)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("error shows the key: %v", err)
				}
				checkError(t, c.name, err, r)
				checkKeys(t, kind, srv.Requests())
			})
		}
	})
}

func checkError(t *testing.T, name string, err error, r *backend.Reply) {
	t.Helper()
	d, ok := backend.RetryAfter(err)
	if name == "rate limit" && (!ok || d != 7*time.Second) {
		t.Errorf("RetryAfter = %v %v, want 7s", d, ok)
	} else if name != "rate limit" && ok {
		t.Errorf("RetryAfter = %v on %v", d, err)
	}
	if backend.IsContextOverflow(err) != (name == "overflow") {
		t.Errorf("IsContextOverflow = %v on %v", !(name == "overflow"), err)
	}
	if name == "cut stream" || name == "error event" {
		if r == nil || r.Message.Text == "" || !strings.HasPrefix(strings.Repeat("word ", 40), r.Message.Text) {
			t.Errorf("partial reply %+v, want the text that arrived", r)
		}
	}
}

// checkKeys asserts the key went in a header of every request and never
// in a URL or a body.
func checkKeys(t *testing.T, kind string, reqs []llmtest.Request) {
	t.Helper()
	for _, r := range reqs {
		if strings.Contains(r.Path+"?"+r.Query, testKey) || strings.Contains(string(r.Body), testKey) {
			t.Errorf("%s %s: key in the URL or body", r.Method, r.Path)
		}
		auth := r.Header.Get("Authorization") == "Bearer "+testKey
		if kind == config.KindAnthropic {
			auth = auth && r.Header.Get("X-Api-Key") == testKey
		}
		if !auth {
			t.Errorf("%s %s: key not sent in the auth header", r.Method, r.Path)
		}
	}
}

func TestContractAuth(t *testing.T) {
	eachKind(t, func(t *testing.T, kind string) {
		srv := llmtest.NewTest(t, &llmtest.Script{Key: testKey})
		b := newBackend(t, kind, srv, "sk-wrong-key")
		_, _, err := collect(t, b, &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}})
		if !errs.Is(err, errs.Permission) || strings.Contains(err.Error(), "sk-wrong-key") {
			t.Errorf("error %v, want a permission error without the key", err)
		}
		if _, err := b.Models(context.Background()); !errs.Is(err, errs.Permission) {
			t.Errorf("models: %v, want a permission error", err)
		}
	})
}

func TestContractModels(t *testing.T) {
	eachKind(t, func(t *testing.T, kind string) {
		b, srv := newPair(t, kind, &llmtest.Script{})
		ms, err := b.Models(context.Background())
		if err != nil || len(ms) != 2 || ms[0].ID != testModel || ms[1].ID != "other-model" {
			t.Fatalf("Models = %+v, %v", ms, err)
		}
		for range 2 { // the second answer comes from the cache
			n, err := b.ContextWindow(context.Background(), testModel)
			if err != nil || n != 16384 {
				t.Errorf("ContextWindow = %d, %v; want 16384", n, err)
			}
		}
		if _, err := b.ContextWindow(context.Background(), "no-such-model"); !errs.Is(err, errs.NotExist) {
			t.Errorf("ContextWindow of an unknown model: %v, want not found", err)
		}
		if b.Name() != "test-"+kind || b.Kind() != kind {
			t.Errorf("Name, Kind = %s, %s", b.Name(), b.Kind())
		}
		checkKeys(t, kind, srv.Requests())
	})
}

func TestContractCancel(t *testing.T) {
	stop := errors.New("stop reading")
	eachKind(t, func(t *testing.T, kind string) {
		b, _ := newPair(t, kind, &llmtest.Script{Loop: true, Turns: []llmtest.Turn{{Text: strings.Repeat("tick ", 50)}}})
		req := &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}
		// An error from the callback stops the stream and comes back as is.
		_, err := b.Chat(context.Background(), req, func(backend.Event) error { return stop })
		if !errors.Is(err, stop) {
			t.Errorf("callback error: got %v", err)
		}
		// Cancelling the context interrupts the stream.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err = b.Chat(ctx, req, func(backend.Event) error { cancel(); return nil })
		if !errs.Is(err, errs.Interrupted) {
			t.Errorf("cancelled: got %v, want interrupted", err)
		}
	})
}

func TestNoModel(t *testing.T) {
	eachKind(t, func(t *testing.T, kind string) {
		srv := llmtest.NewTest(t, &llmtest.Script{Models: []llmtest.Model{{ID: "pulled:latest"}}})
		url := srv.URL
		if kind == config.KindOpenAI {
			url += "/v1"
		}
		b, err := backend.New(config.Backend{Name: "n", Kind: kind, BaseURL: url}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Chat(context.Background(), &backend.Request{Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}, nil)
		if kind == config.KindOllama {
			// A local Ollama with no model configured uses one it has.
			if err != nil || srv.Requests()[len(srv.Requests())-1].Model != "pulled:latest" || r.Message.Text != "ok" {
				t.Errorf("got %v, %+v", err, srv.Requests())
			}
			return
		}
		if !errs.Is(err, errs.Invalid) || len(srv.Requests()) != 0 {
			t.Errorf("got %v after %d requests, want a bad request error before any", err, len(srv.Requests()))
		}
	})
}

func TestOllamaUnknownModel(t *testing.T) {
	// /api/show does not know the model: the chat goes without num_ctx,
	// for /api/chat to answer in its own words.
	b, srv := newPair(t, config.KindOllama, &llmtest.Script{})
	_, err := b.Chat(context.Background(), &backend.Request{Model: "unpulled", Messages: []backend.Message{{Role: backend.RoleUser, Text: "hi"}}}, nil)
	reqs := srv.Requests()
	if err != nil || len(reqs) != 2 || reqs[0].Path != "/api/show" || reqs[1].Model != "unpulled" || reqs[1].NumCtx != 0 {
		t.Errorf("got %v after %+v", err, reqs)
	}
	if _, err := b.ContextWindow(context.Background(), "unpulled"); !errs.Is(err, errs.NotExist) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("ContextWindow: %v, want not found with the server's reason", err)
	}
}
