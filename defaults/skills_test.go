package defaults_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/defaults"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/mcpbridge/mcptest"
)

// A skill's promise: what its example prints, in a tree set up for it.
type promise struct {
	want []string // all in the output of a successful call
	skip string   // why the example is not run here
}

// promises holds every execute_code example of every skill, by its exact
// text; a new example without an entry fails the test.
var promises = map[string]promise{
	`{"steps":[{"tool":"chat_search","args":["nginx","config"]}]}`: {want: []string{"== session ", "(web)", "assistant: The nginx config is in /etc/nginx"}},
	`{"steps":[{"tool":"chat_search","args":["migration","--session","1764489600000000000-a1b2c3","--max","20"]}]}`: {want: []string{
		"== transcript 1764489600000000000-a1b2c3", "1: user: run the migration"}},
	`{"steps":[{"tool":"file_grep","args":["func New\\w*\\(","internal","--glob","*.go"]}]}`:                                      {want: []string{"internal/srv/srv.go:3:func NewServer() *Server {"}},
	`{"steps":[{"tool":"file_read","args":["main.go","10","40"]}]}`:                                                               {want: []string{"    10\t// line 10", "    40\t"}},
	`{"steps":[{"tool":"file_edit","args":["main.go","\treturn nil\n}","\treturn err\n}"]}]}`:                                     {want: []string{"-\treturn nil", "+\treturn err", "edited main.go: 1 replacement"}},
	`{"steps": [{"tool": "mcp", "args": ["find", "sum"]}]}`:                                                                       {want: []string{"everything get-sum: Returns the sum of two numbers; args: a:number b:number"}},
	`{"steps": [{"tool": "mcp", "args": ["call", "everything", "get-sum", "{\"a\": 1, \"b\": 2}"]}]}`:                             {want: []string{"The sum of 1 and 2 is 3."}},
	`{"steps":[{"tool":"memory_remember","args":["Deploy of shop","deploy","shop","--body","make deploy ENV=prod; needs VPN"]}]}`: {want: []string{"remembered ", "/m/deploy-of-shop.md"}},
	`{"steps":[{"tool":"memory_recall","args":["deploy","shop"]}]}`:                                                               {want: []string{"Deploy of shop", "make deploy ENV=prod; needs VPN"}},
	`{"steps":[{"tool":"memory_recall","args":["--tag","shop"]}]}`:                                                                {want: []string{"Deploy of shop"}},
	`{"steps":[{"tool":"reasoning_think","args":["The test fails only with -race: a data race in cache.go, not a logic bug. Check the mutex first."]}]}`: {want: []string{
		"thought noted (19 words); go on."}},
	`{"steps": [{"tool": "subagent_spawn", "args": ["Summarize the error handling in cmd/server/*.go in 5 bullets"]}]}`: {want: []string{
		"=== sub-agent b/", ": Summarize the error handling in cmd/server/*.go in 5 bullets ===\n- errors are wrapped with %w"}},
	`{"steps":[{"tool":"task_add","args":["reproduce the bug","write a failing test","fix it","run all tests"]}]}`: {want: []string{
		"1. [ ] reproduce the bug\n2. [ ] write a failing test\n3. [ ] fix it\n4. [ ] run all tests\n(0 of 4 done)"}},
	`{"steps":[{"tool":"task_check","args":["1","2"]}]}`: {want: []string{"1. [x] reproduce the bug\n2. [x] write a failing test", "(2 of 4 done)"}},
}

// Every example of every skill runs through execute_code, as the model
// would copy it, in a session whose tree and cwd hold what the example
// expects, and prints what the skill promises. Examples run in the order
// of the skills and of their lines (task_check after task_add).
func TestSkillExamplesRun(t *testing.T) {
	// sk/mcp.md's examples use a server the user lists as "everything":
	// the reference server, read from where test.sh installs it (the
	// sandbox hides $HOME, so the profile reads it, as a user's would a
	// global node_modules).
	ev := mcptest.EverythingCmd(t)
	f := newTreeCfg(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: "nginx", Then: llmtest.Turn{Text: "The nginx config is in /etc/nginx/sites-enabled/shop."}},
		{If: "^Summarize the error handling", Then: llmtest.Turn{Text: "- errors are wrapped with %w"}},
	}}, func(cfg *config.Config) {
		p := cfg.Sandbox.Profiles["workspace"]
		p.Read = append(append([]string{}, p.Read...), mcptest.Dir())
		cfg.Sandbox.Profiles["workspace"] = p
	})
	list, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": ev[0], "args": ev[1:]}}})
	os.MkdirAll(filepath.Join(f.cfg.ConfigDir, "t", "mcp.d"), 0o700)
	writeRaw(t, filepath.Join(f.cfg.ConfigDir, "t", "mcp.d", "servers.json"), string(list))
	// t/mcp calls ollie's bridge, ollie-mcp beside ollie: this package's
	// test binary is neither, so the real ones are built, into the cwd,
	// which the sandbox lets stages run.
	bin := filepath.Join(f.cwd, ".ollie-bin", "ollie")
	if out, err := exec.Command("go", "build", "-o", filepath.Dir(bin)+"/", "../cmd/ollie", "../cmd/ollie-mcp").CombinedOutput(); err != nil {
		t.Fatalf("go build ollie ollie-mcp: %v\n%s", err, out)
	}
	web := f.newSession("web")
	if err := f.fsys.WriteFile(ctx, "s/"+web+"/prompt", []byte("where is the nginx config?\n"), 0); err != nil {
		t.Fatal(err)
	}
	readTree(t, f, "s/"+web+"/wait")
	writeRaw(t, filepath.Join(f.cfg.DataDir, "tr", "1764489600000000000-a1b2c3.chat"), "user: run the migration\nassistant: done\n")
	var main strings.Builder
	main.WriteString("package main\n\nfunc run() error {\n\terr := step()\n\tlog(err)\n\treturn nil\n}\n\n")
	for i := 9; i <= 45; i++ {
		fmt.Fprintf(&main, "// line %d\n", i)
	}
	f.write("main.go", main.String())
	f.write("internal/srv/srv.go", "package srv\n\nfunc NewServer() *Server {\n\treturn &Server{}\n}\n")
	me := f.newSession("learner")

	seen := map[string]bool{}
	err := fs.WalkDir(defaults.FS(), "sk", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(defaults.FS(), p)
		for _, ex := range examples(string(b)) {
			seen[ex] = true
			pr, ok := promises[ex]
			if !ok {
				t.Errorf("%s: example %s has no promise in this test: add what it prints", p, ex)
				continue
			}
			if pr.skip != "" {
				t.Logf("%s: not run: %s", ex, pr.skip)
				continue
			}
			var a struct{ Steps []map[string]any }
			if err := json.Unmarshal([]byte(ex), &a); err != nil {
				t.Fatal(err)
			}
			out := f.runEnv(me, []string{"OLLIE_BIN=" + bin}, a.Steps...)
			if out.Failed() {
				t.Errorf("%s: %s failed:\n%s", p, ex, out.Out())
				continue
			}
			for _, w := range pr.want {
				if !strings.Contains(out.Out(), w) {
					t.Errorf("%s: %s: output lacks %q:\n%s", p, ex, w, out.Out())
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for ex := range promises {
		if !seen[ex] {
			t.Errorf("no skill has the example %s any more: drop its promise", ex)
		}
	}
	if _, err := os.Stat(filepath.Join(f.cfg.DataDir, "m", "deploy-of-shop.md")); err != nil {
		t.Errorf("memory_remember's example wrote no note: %v", err)
	}
}
