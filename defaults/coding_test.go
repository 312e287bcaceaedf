package defaults_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// A real coding task, through the whole daemon, only with the shipped
// tools and execute_code: a scripted model finds a function in a small Go
// module made here, reads it, edits it (with a typo, as models do), runs
// go test, fixes the failure, runs the tests again and records a memory
// note. It must succeed; the number of tool calls is logged.
func TestModelFixesABug(t *testing.T) {
	testutil.Require(t, "go")
	goBin, _ := exec.LookPath("go")
	goTest := func() llmtest.Call {
		b, _ := json.Marshal(map[string]any{"steps": []map[string]any{
			code("bash", "GOTOOLCHAIN=local GOFLAGS=-mod=mod "+goBin+" test -vet=off ./... 2>&1"),
		}, "timeout": 120})
		return llmtest.Call{Name: "execute_code", Args: b}
	}
	// As a Go programmer sets up ollie: the workspace profile may write
	// the Go build cache, and the session's env points go at it, so go
	// test inside the sandbox does not rebuild the standard library.
	out, err := exec.Command(goBin, "env", "GOCACHE").Output()
	gocache := strings.TrimSpace(string(out))
	if err != nil || gocache == "" || gocache == "off" {
		t.Fatalf("go env GOCACHE: %q %v", out, err)
	}
	f := newTreeCfg(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `^fix the Sum bug`, Then: llmtest.Turn{Text: "Let me find Sum.",
			Calls: []llmtest.Call{callTool("file_grep", "func Sum", "--type", "go")}}},
		{Role: "tool", If: `(?m)^(\S+\.go):(\d+):func Sum`, Then: llmtest.Turn{
			Calls: []llmtest.Call{callTool("file_read", "{{1}}", "{{2}}", "+8")}}},
		{Role: "tool", If: `(?s)^\s+\d+\tfunc Sum.*\ttotal -= x`, Then: llmtest.Turn{Text: "It subtracts.",
			Calls: []llmtest.Call{callTool("file_edit", "calc/calc.go", "total -= x", "total += y")}}},
		{Role: "tool", If: `(?s)\+\s+total \+= [xy].*edited calc/calc.go: 1 replacement`, Then: llmtest.Turn{
			Calls: []llmtest.Call{goTest()}}},
		{Role: "tool", If: `undefined: y`, Then: llmtest.Turn{Text: "A typo.",
			Calls: []llmtest.Call{callTool("file_edit", "calc/calc.go", "total += y", "total += x")}}},
		{Role: "tool", If: `(?m)^ok\s+example.com/calc`, Then: llmtest.Turn{
			Calls: []llmtest.Call{callTool("memory_remember", "calc Sum sign bug", "go", "calc",
				"--body", "Sum in calc/calc.go subtracted instead of adding; fixed, go test passes.")}}},
		{Role: "tool", If: `remembered (\S+)`, Then: llmtest.Turn{Text: "Fixed Sum; go test passes; noted in {{1}}."}},
		{Role: "tool", If: `(?s).+`, Then: llmtest.Turn{Text: "stuck on: {{last}}"}},
	}}, func(cfg *config.Config) {
		p := cfg.Sandbox.Profiles[policy]
		p.Write = append(p.Write, gocache)
		cfg.Sandbox.Profiles[policy] = p
	})
	f.write("go.mod", "module example.com\n\ngo 1.21\n")
	f.write("calc/calc.go", "package calc\n\n// Sum adds up xs.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal -= x\n\t}\n\treturn total\n}\n")
	f.write("calc/calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif got := Sum([]int{1, 2, 3}); got != 6 {\n\t\tt.Fatalf(\"Sum = %d, want 6\", got)\n\t}\n}\n")
	f.write("README.md", "calc: sums\n")

	s := f.newSession("coder")
	if err := f.fsys.WriteFile(ctx, "s/"+s+"/env", []byte("GOCACHE="+gocache+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.fsys.WriteFile(ctx, "s/"+s+"/prompt", []byte("fix the Sum bug: go test fails\n"), 0); err != nil {
		t.Fatal(err)
	}
	if w := readTree(t, f, "s/"+s+"/wait"); w != "idle\n" {
		t.Fatalf("wait = %q\n%s", w, readTree(t, f, "s/"+s+"/chat"))
	}
	chat := readTree(t, f, "s/"+s+"/chat")
	reply := readTree(t, f, "s/"+s+"/reply")
	if want := "Fixed Sum; go test passes; noted in " + f.mnt + "/m/calc-sum-sign-bug.md.\n"; reply != want {
		t.Fatalf("reply %q, want %q\nchat:\n%s", reply, want, chat)
	}
	if got := f.read("calc/calc.go"); !strings.Contains(got, "\t\ttotal += x\n") {
		t.Errorf("calc.go after the task:\n%s", got)
	}
	// The tests pass outside the sandbox too.
	cmd := exec.Command(goBin, "test", "./...")
	cmd.Dir, cmd.Env = f.cwd, append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go test after the task: %v\n%s", err, out)
	}
	note, err := os.ReadFile(filepath.Join(f.cfg.DataDir, "m", "calc-sum-sign-bug.md"))
	if err != nil || !strings.Contains(string(note), "subtracted instead of adding") {
		t.Errorf("memory note: %v\n%s", err, note)
	}
	calls := strings.Count(chat, "-> execute_code(")
	for _, want := range []string{`"tool":"file_grep"`, `"tool":"file_read"`, `"tool":"file_edit"`, "undefined: y", `"tool":"memory_remember"`} {
		if !strings.Contains(chat, want) {
			t.Errorf("the chat lacks %s", want)
		}
	}
	if calls != 7 {
		t.Errorf("%d tool calls, want 7 (grep, read, edit, test, edit, test, remember)\n%s", calls, chat)
	}
	t.Logf("the task took %d tool calls", calls)
}
