package mcpbridge_test

import (
	"context"
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
