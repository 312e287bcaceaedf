package agent_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
)

// TestForkJoinEightSubagents: the model fans out to eight sub-agents in a
// parallel stage, each branch running t/subagent_spawn inside the sandbox
// through the mounted tree; the answers arrive in submission order.
func TestForkJoinEightSubagents(t *testing.T) {
	var branches []string
	for k := 1; k <= 8; k++ {
		branches = append(branches, fmt.Sprintf(`{"tool":"subagent_spawn","args":["task %d"]}`, k))
	}
	args := `{"steps":[{"parallel":[` + strings.Join(branches, ",") + `]}],"timeout":120}`
	e := newEnvMount(t, config.KindOpenAI, &llmtest.Script{
		Rules: []llmtest.Rule{{If: `^task (\d+)`, Then: llmtest.Turn{Text: "answer {{1}}"}}},
		Turns: []llmtest.Turn{
			{Calls: []llmtest.Call{{Name: "execute_code", Args: json.RawMessage(args)}}},
			{Text: "collected"},
		},
	}, true)
	s := e.newSession("")
	wait, reply := e.ask(s, "fan out")
	if wait != "idle\n" || reply != "collected\n" {
		t.Fatalf("wait %q reply %q\n%s", wait, reply, e.read("s/"+s+"/chat"))
	}
	reqs := e.llm.Requests()
	var result string
	for _, r := range reqs {
		if m := r.Messages; len(m) > 0 && m[len(m)-1].Role == "tool" {
			result = m[len(m)-1].Text
		}
	}
	// Each answer under the header subagent_spawn gives it.
	var want strings.Builder
	for k := 1; k <= 8; k++ {
		fmt.Fprintf(&want, `=== sub-agent b/\S+: task %d ===\nanswer %d\n`, k, k)
	}
	if !regexp.MustCompile("^" + want.String() + "$").MatchString(result) {
		t.Errorf("joined answers:\n%q\nwant:\n%q", result, want.String())
	}
	// Eight jobs, each a child of the session, under its policy.
	jobs := e.d.Batch.List()
	if len(jobs) != 8 {
		t.Fatalf("%d jobs, want 8", len(jobs))
	}
	id := strings.TrimSpace(strings.SplitN(e.read("s/idx"), "\t", 2)[0])
	for _, j := range jobs {
		if sp := j.Spec(); sp.Parent != id || sp.Sandbox != "workspace" {
			t.Errorf("job %s: parent %q sandbox %q", j.ID(), sp.Parent, sp.Sandbox)
		}
	}
}

// TestSandboxedCodeCannotWriteTheTree: the model's code can read the tree
// and write its own session, memory and tmp, but not agent configurations,
// prompts, other sessions, or b/new (whose jobs would escape its policy).
func TestSandboxedCodeCannotWriteTheTree(t *testing.T) {
	e := newEnvMount(t, config.KindOllama, &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{llmtest.ExecuteCode("sh", `
for f in a/default.json p/base.md b/new s/new s/other/plan t/idx; do
  if (echo pwned > "$OLLIE/$f") 2>/dev/null; then echo "WROTE $f"; else echo "denied $f"; fi
done
echo note > "$OLLIE/m/note" && echo "wrote m"
echo plan > "$OLLIE_SESSION/plan" && echo "wrote plan"
cat "$OLLIE/help" >/dev/null && echo "read help"`)}},
		{Text: "done"},
	}}, true)
	e.newSession("name=other")
	s := e.newSession("")
	e.ask(s, "try")
	reqs := e.llm.Requests()
	msgs := reqs[len(reqs)-1].Messages
	out := msgs[len(msgs)-1].Text
	if strings.Contains(out, "WROTE") {
		t.Errorf("sandboxed code wrote the tree:\n%s", out)
	}
	for _, w := range []string{"denied a/default.json", "denied b/new", "denied s/other/plan", "wrote m", "wrote plan", "read help"} {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
}
