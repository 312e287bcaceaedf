package defaults_test

import (
	"encoding/json"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
)

// callTool is the execute_code call a model makes to run one tool.
func callTool(name string, args ...string) llmtest.Call {
	b, _ := json.Marshal(map[string]any{"steps": []map[string]any{{"tool": name, "args": args}}})
	return llmtest.Call{Name: "execute_code", Args: b}
}

// A scripted model, through the whole daemon: one session remembers a
// fact with memory_remember and ends; a new session asked about it calls
// memory_recall and answers from what the tool printed.
func TestModelRemembersAcrossSessions(t *testing.T) {
	f := newTree(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `^remember: (.*)`, Then: llmtest.Turn{Text: "Saving that.",
			Calls: []llmtest.Call{callTool("memory_remember", "Release checklist", "release", "--body", "{{1}}")}}},
		{Role: "tool", If: `remembered (\S+)`, Then: llmtest.Turn{Text: "Saved as {{1}}."}},
		{If: `what do you know about (\w+)`, Then: llmtest.Turn{
			Calls: []llmtest.Call{callTool("memory_recall", "{{1}}")}}},
		{Role: "tool", If: `(?s)Release checklist  \[release\]\n([^\n]*)`, Then: llmtest.Turn{Text: "From memory: {{1}}"}},
		{Role: "tool", If: `.`, Then: llmtest.Turn{Text: "The tool did not give what I expected."}},
	}})
	ask := func(s, q string) string {
		t.Helper()
		if err := f.fsys.WriteFile(ctx, "s/"+s+"/prompt", []byte(q+"\n"), 0); err != nil {
			t.Fatal(err)
		}
		if w := readTree(t, f, "s/"+s+"/wait"); w != "idle\n" {
			t.Fatalf("wait = %q\n%s", w, readTree(t, f, "s/"+s+"/chat"))
		}
		return readTree(t, f, "s/"+s+"/reply")
	}

	first := f.newSession("first")
	reply := ask(first, "remember: tag the release before building the images")
	if want := "Saved as " + f.mnt + "/m/release-checklist.md.\n"; reply != want {
		t.Fatalf("reply %q, want %q\nchat:\n%s", reply, want, readTree(t, f, "s/"+first+"/chat"))
	}
	// The system prompt names the tools and where their uses and skills are.
	sp := readTree(t, f, "s/"+first+"/systemprompt")
	for _, want := range []string{" memory_recall ", "cat $OLLIE/t/idx", "(file_read: sk/file.md)"} {
		if !strings.Contains(sp, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sp)
		}
	}
	f.endSession("first")

	later := f.newSession("later")
	reply = ask(later, "what do you know about release?")
	if reply != "From memory: tag the release before building the images\n" {
		t.Fatalf("reply %q\nchat:\n%s", reply, readTree(t, f, "s/"+later+"/chat"))
	}
	chat := readTree(t, f, "s/"+later+"/chat")
	if !strings.Contains(chat, `-> execute_code({"steps":[{"args":["release"],"tool":"memory_recall"}]})`) {
		t.Errorf("chat does not show the tool call:\n%s", chat)
	}
}
