package defaults_test

import (
	"strconv"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
)

// A sub-agent's session tools work in its own directory, b/<job>/<k>: a
// scripted model, through the real daemon, has its sub-agent keep a
// checklist (task_add, task_check, task_list), note a thought in its plan
// (reasoning_think --plan) and spawn a sub-agent of its own
// (subagent_spawn), then report; the parent answers from the report.
func TestSubagentSessionTools(t *testing.T) {
	f := newTree(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `^delegate`, Then: llmtest.Turn{Calls: []llmtest.Call{callTool("subagent_spawn", "child: keep a checklist")}}},
		{If: `^child: keep a checklist`, Then: llmtest.Turn{Calls: []llmtest.Call{
			callTool("task_add", "write the test", "ship it"),
			callTool("task_check", "1"),
			callTool("reasoning_think", "the test comes first", "--plan"),
			callTool("subagent_spawn", "--", "- grandchild: say hello"),
		}}},
		{If: `^- grandchild: say hello`, Then: llmtest.Turn{Text: "grandchild says hello"}},
		{Role: "tool", If: `(?m)^grandchild says hello`, Then: llmtest.Turn{
			Calls: []llmtest.Call{callTool("task_list")}}},
		{Role: "tool", If: `(?s)1\. \[x\] write the test\n\s*2\. \[ \] ship it\n\(1 of 2 done\)`, Then: llmtest.Turn{Text: "child report: checklist kept, grandchild answered"}},
		{Role: "tool", If: `(?m)^child report: (.*)`, Then: llmtest.Turn{Text: "parent heard: {{1}}"}},
		{Role: "tool", If: `(?s).+`, Then: llmtest.Turn{Text: "unexpected tool output: {{last}}"}},
	}})
	s := f.newSession("parent")
	if err := f.fsys.WriteFile(ctx, "s/"+s+"/prompt", []byte("delegate\n"), 0); err != nil {
		t.Fatal(err)
	}
	if w := readTree(t, f, "s/"+s+"/wait"); w != "idle\n" {
		t.Fatalf("wait = %q\n%s", w, readTree(t, f, "s/"+s+"/chat"))
	}
	reply := readTree(t, f, "s/"+s+"/reply")
	if reply != "parent heard: checklist kept, grandchild answered\n" {
		t.Fatalf("reply %q\nparent's chat:\n%s\n%s", reply, readTree(t, f, "s/"+s+"/chat"), f.jobChats(t))
	}
	// The child's plan, in its own member directory, holds both.
	var child, grand string
	for _, j := range f.d.Batch.List() {
		if j.Spec().Parent == s {
			child = "b/" + j.ID() + "/1"
		} else {
			grand = "b/" + j.ID() + "/1"
		}
	}
	if child == "" || grand == "" || len(f.d.Batch.List()) != 2 {
		t.Fatalf("jobs: %d, want the child's and the grandchild's", len(f.d.Batch.List()))
	}
	plan := readTree(t, f, child+"/plan")
	for _, want := range []string{"## Tasks", "- [x] write the test", "- [ ] ship it", "## Notes", "- the test comes first"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the child's plan lacks %q:\n%s", want, plan)
		}
	}
	if r := readTree(t, f, grand+"/reply"); r != "grandchild says hello\n" {
		t.Errorf("grandchild's reply %q", r)
	}
	// What the child's tools printed.
	chat := readTree(t, f, child+"/chat")
	for _, want := range []string{"1. [ ] write the test", "1. [x] write the test",
		"thought noted (4 words), kept in the plan; go on.", "grandchild says hello"} {
		if !strings.Contains(chat, want) {
			t.Errorf("the child's chat lacks %q:\n%s", want, chat)
		}
	}
}

// jobChats is every sub-agent's chat, for failure messages.
func (f *fixture) jobChats(t *testing.T) string {
	var b strings.Builder
	for _, j := range f.d.Batch.List() {
		for k := range j.Members() {
			name := "b/" + j.ID() + "/" + strconv.Itoa(k+1) + "/chat"
			c, err := f.fsys.ReadFile(ctx, name)
			b.WriteString("--- " + name + "\n" + string(c))
			if err != nil {
				b.WriteString(err.Error() + "\n")
			}
		}
	}
	return b.String()
}
