package redact

import (
	"errors"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

const key = "k3y-Zq8vW2xYp1LmN0oR"

func TestString(t *testing.T) {
	r := New(key, "ab") // "ab" is too short to be a key
	for _, c := range []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"the key is " + key + ".", "the key is [redacted]."},
		{key + key, "[redacted][redacted]"},
		{"about ab", "about ab"},
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer [redacted]"},
		{"authorization:basic dXNlcjpwYXNz\n", "authorization:basic [redacted]\n"},
		{"AUTHORIZATION = Token 0123456789", "AUTHORIZATION = Token [redacted]"},
		{"Authorization: abc123", "Authorization: [redacted]"},
		{`{"Authorization":"Bearer xyz"}`, `{"Authorization":"Bearer [redacted]"}`},
		{`{\"authorization\": \"Bearer xyz\"}`, `{\"authorization\": \"Bearer [redacted]\"}`},
		{"map[Authorization:[Bearer xyz] X-Api-Key:[k1]]", "map[Authorization:[Bearer [redacted]] X-Api-Key:[[redacted]]]"},
		{"x-api-key: abc", "x-api-key: [redacted]"},
		{"X-Goog-Api-Key: AIzaSyD", "X-Goog-Api-Key: [redacted]"},
		{"api-key=abc", "api-key=[redacted]"},
		{`"api_key": "abc"`, `"api_key": "[redacted]"`},
		{"OPENAI_API_KEY=xyz", "OPENAI_API_KEY=[redacted]"},
		{"x-auth-token: 0123456789abcdef", "x-auth-token: [redacted]"},
		{`"max_tokens": 100`, `"max_tokens": 100`},
		{"token: short", "token: short"},
		{`"client_secret":"s3cr3t!"`, `"client_secret":"[redacted]!"`},
		{"password=hunter22", "password=[redacted]"},
		{"use bearer tokens", "use bearer tokens"},
		{"bearer eyJhbGciOiJIUzI1NiJ9.e30.x", "bearer [redacted]"},
		{"key sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "key [redacted]"},
		{"(sk-proj-0123456789abcdefghij)", "([redacted])"},
		{"task-0123456789abcdefghijkl", "task-0123456789abcdefghijkl"},
		{"sk-short", "sk-short"},
		{"GET /v1?x=1&key=AIzaXYZ&y=2", "GET /v1?x=1&[redacted]&y=2"[:0] + "GET /v1?x=1&key=[redacted]&y=2"},
		{"https://user:pa55@example.com/v1", "https://user:[redacted]@example.com/v1"},
		{"https://example.com/a:b", "https://example.com/a:b"},
		{"Authorization: Bearer [redacted]", "Authorization: Bearer [redacted]"},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestIdempotent(t *testing.T) {
	r := New(key)
	for _, in := range []string{"Authorization: Bearer " + key, "x-api-key: " + key, `{"api-key":"` + key + `"}`} {
		once := r.String(in)
		if strings.Contains(once, key) {
			t.Errorf("%q: key left in %q", in, once)
		}
		if twice := r.String(once); twice != once {
			t.Errorf("%q: second pass changed %q to %q", in, once, twice)
		}
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if got := r.String("x-api-key: abc"); got != "x-api-key: [redacted]" {
		t.Errorf("nil redactor: %q", got)
	}
	if got := r.String(key); got != key {
		t.Errorf("nil redactor knows no literal keys: %q", got)
	}
}

func TestFromConfig(t *testing.T) {
	c := &config.Config{Secrets: map[string]string{"a": key}, Backends: []config.Backend{{Name: "a", APIKeyEnv: "MY_LLM"}}}
	r := FromConfig(c, "tok-9p-0123456789")
	if r.Secrets() != 2 {
		t.Fatalf("secrets = %d, want 2", r.Secrets())
	}
	if got := r.String("k=" + key + " t=tok-9p-0123456789"); strings.Contains(got, key) || strings.Contains(got, "tok-9p") {
		t.Errorf("FromConfig: %q", got)
	}
}

func TestError(t *testing.T) {
	r := New(key)
	base := errs.E(errs.Permission, "backend x: http 401: echo x-api-key: "+key)
	err := r.Error(base)
	if strings.Contains(err.Error(), key) {
		t.Fatalf("key in %q", err)
	}
	if !errors.Is(err, base) || errs.KindOf(err) != errs.Permission {
		t.Errorf("chain lost: kind %v", errs.KindOf(err))
	}
	if r.Error(err) != err {
		t.Errorf("second redaction wrapped again")
	}
	plain := errs.E(errs.NotExist, "no such model")
	if r.Error(plain) != plain {
		t.Errorf("a clean error was wrapped")
	}
	if r.Error(nil) != nil {
		t.Errorf("nil error")
	}
}

func TestWriterAndLogger(t *testing.T) {
	r := New(key)
	var b strings.Builder
	l := r.Logger(nilLogger(&b))
	l.Printf("call failed: Authorization: Bearer %s", key)
	if strings.Contains(b.String(), key) || !strings.Contains(b.String(), Marker) {
		t.Errorf("log line %q", b.String())
	}
	if r.Logger(l) != l {
		t.Errorf("a redacted logger was wrapped again")
	}
}

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://api.example.com/v1", "https://api.example.com/v1"},
		{"https://user:sekrit@api.example.com/v1", "https://api.example.com/v1"},
		{"https://api.example.com/v1?api-key=abc&region=eu", "https://api.example.com/v1?region=eu"},
		{"https://h/v1?API_KEY=1&Key=2&access_token=3&TOKEN=4&x=5&sig=6", "https://h/v1?x=5"},
		{"http://127.0.0.1:11434", "http://127.0.0.1:11434"},
		{"http://h/?key=", "http://h/"},
		{"http://h/#token=abc", "http://h/"},
		{"::bad", Marker},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEnv(t *testing.T) {
	c := &config.Config{Secrets: map[string]string{"a": key}, Backends: []config.Backend{{Name: "a", APIKeyEnv: "MY_LLM"}}}
	r := FromConfig(c)
	env := []string{"PATH=/bin", "MY_LLM=" + key, "OTHER=x" + key, "OPENAI_API_KEY=1", "GITHUB_TOKEN=2",
		"AWS_SECRET_ACCESS_KEY=3", "PGPASSWORD=4", "LANG=C", "bad", "MY_PAT=5", "GOOGLE_APPLICATION_CREDENTIALS=/f"}
	got := strings.Join(r.Env(env, []string{"GITHUB_TOKEN", "MY_LLM"}), " ")
	if want := "PATH=/bin GITHUB_TOKEN=2 LANG=C"; got != want {
		t.Errorf("Env = %q, want %q", got, want)
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"the key " + key + " is here", 12, "the key ..."},
		{"the key " + key, 8, "the key ..."},
		{key, 5, "..."},
		{"préfix", 3, "pr..."},
	} {
		if got := Cut(c.in, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestKeysOnly(t *testing.T) {
	r := New(key)
	in := `{"role":"tool","text":"password: hunter22\nkey ` + key + `"}`
	want := `{"role":"tool","text":"password: hunter22\nkey [redacted]"}`
	if got := string(r.KeysBytes([]byte(in))); got != want {
		t.Errorf("KeysBytes = %q, want %q", got, want)
	}
	var nilr *Redactor
	if got := nilr.Keys(in); got != in {
		t.Errorf("nil Keys changed %q", got)
	}
}

func TestHeld(t *testing.T) {
	r := New(key, "sk-other-0123456789")
	for _, c := range []struct {
		in   string
		want int
	}{
		{"hello", 0},
		{"the key is " + key[:5], 5},
		{"the key is " + key, 0},
		{"ends in k", 1},
		{"ends in s", 1},
		{"ends in sk-o", 4},
		{"ends in x", 0},
	} {
		if got := r.Held(c.in); got != c.want {
			t.Errorf("Held(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	if r.Unheld(key[:6]) != Marker || r.Unheld("k3") != "k3" || r.Unheld("hello") != "hello" {
		t.Errorf("Unheld")
	}
	// A key streamed in pieces of three bytes comes out whole and redacted.
	s := "before " + key + " after"
	var out, hold string
	for i := 0; i < len(s); i += 3 {
		text := hold + s[i:min(i+3, len(s))]
		n := r.Held(text)
		out += r.String(text[:len(text)-n])
		hold = text[len(text)-n:]
	}
	out += r.String(r.Unheld(hold))
	if out != "before [redacted] after" {
		t.Errorf("streamed: %q", out)
	}
}
