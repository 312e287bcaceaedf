package mcpbridge_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/mcpbridge"
	"ollie.dev/ollie/internal/mcpbridge/mcptest"
)

func dial(t *testing.T, tg mcpbridge.Target) *mcpbridge.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if tg.Env == nil && tg.Command != nil {
		tg.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	}
	c, err := mcpbridge.Dial(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestEverythingStdio(t *testing.T) {
	ctx := context.Background()
	c := dial(t, mcpbridge.Target{Name: "everything", Command: mcptest.EverythingCmd(t)})
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idx := string(mcpbridge.Idx(tools))
	for _, want := range []string{
		"echo: Echoes back the input string; args: message:string\n",
		"get-sum: Returns the sum of two numbers; args: a:number b:number\n",
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("idx lacks %q:\n%s", want, idx)
		}
	}
	res, err := c.Call(ctx, "echo", []byte(`{"message":"hello from ollie"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpbridge.CallText(res); got != "Echo: hello from ollie\n" {
		t.Errorf("echo gave %q", got)
	}
	res, err = c.Call(ctx, "get-sum", []byte(`{"a":40,"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpbridge.CallText(res); !strings.Contains(got, "is 42.") {
		t.Errorf("get-sum gave %q", got)
	}

	rs, ts, err := c.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 && len(ts) == 0 {
		t.Fatal("no resources listed")
	}
	list := mcpbridge.ResourcesText(rs, ts)
	if len(rs) > 0 {
		rd, err := c.Read(ctx, rs[0].URI)
		if err != nil {
			t.Fatal(err)
		}
		if len(rd.Contents) == 0 || rd.Contents[0].URI != rs[0].URI {
			t.Errorf("read %s gave %+v", rs[0].URI, rd.Contents)
		}
	}
	t.Logf("resources:\n%s", list)

	ps, err := c.Prompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mcpbridge.PromptsText(ps), "simple-prompt") {
		t.Errorf("prompts:\n%s", mcpbridge.PromptsText(ps))
	}
}

func TestErrorsCarryTheServersMessage(t *testing.T) {
	ctx := context.Background()
	c := dial(t, mcpbridge.Target{Name: "everything", Command: mcptest.EverythingCmd(t)})
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"no-such-tool", `{}`, "no-such-tool"},
		{"get-sum", `{"a":"forty","b":2}`, "expected number"},
		{"echo", `[1,2]`, "not a JSON object"},
	} {
		_, err := c.Call(ctx, tc.tool, []byte(tc.args))
		if err == nil {
			t.Errorf("call %s %s succeeded", tc.tool, tc.args)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("call %s %s: error %q lacks %q", tc.tool, tc.args, err, tc.want)
		}
		t.Logf("%s: %v (%v)", tc.tool, err, errs.KindOf(err))
	}
	if _, err := c.Read(ctx, "demo://nothing/here"); err == nil {
		t.Errorf("read of a missing resource succeeded")
	} else {
		t.Logf("read: %v", err)
	}
}

// TestProxy serves server-everything again over streamable HTTP and
// checks that calls, resources and failures pass through unchanged.
func TestProxy(t *testing.T) {
	ctx := context.Background()
	up := dial(t, mcpbridge.Target{Name: "everything", Command: mcptest.EverythingCmd(t)})
	s, err := mcpbridge.NewProxy(ctx, up)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(mcpbridge.HTTPHandler(s))
	defer hs.Close()
	c := dial(t, mcpbridge.Target{Name: "proxied", URL: hs.URL})
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	upTools, _ := up.Tools(ctx)
	if a, b := string(mcpbridge.Idx(tools)), string(mcpbridge.Idx(upTools)); a != b {
		t.Errorf("tools through the proxy:\n%s\nupstream:\n%s", a, b)
	}
	res, err := c.Call(ctx, "get-sum", []byte(`{"a":2,"b":3}`))
	if err != nil || !strings.Contains(mcpbridge.CallText(res), "is 5.") {
		t.Errorf("get-sum through the proxy: %v %+v", err, res)
	}
	if _, err := c.Call(ctx, "get-sum", []byte(`{"a":"two"}`)); err == nil || !strings.Contains(err.Error(), "proxied: get-sum: MCP error -32602: Input validation error") {
		t.Errorf("a failing call through the proxy: %v", err)
	}
	rd, err := c.Read(ctx, "demo://resource/static/document/features.md")
	if err != nil || len(rd.Contents) != 1 || rd.Contents[0].Text == "" {
		t.Errorf("read through the proxy: %v %+v", err, rd)
	}
	if _, err := c.Read(ctx, "demo://not/here"); err == nil {
		t.Errorf("reading a missing resource through the proxy worked")
	}
	ps, err := c.Prompts(ctx)
	if err != nil || !strings.Contains(mcpbridge.PromptsText(ps), "simple-prompt") {
		t.Errorf("prompts through the proxy: %v", err)
	}
	pr, err := c.Prompt(ctx, "simple-prompt", nil)
	if err != nil || !strings.HasPrefix(mcpbridge.PromptText(pr), "user: ") {
		t.Errorf("a prompt through the proxy: %v %+v", err, pr)
	}
}
