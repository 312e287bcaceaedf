package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
)

// hooked writes an agent configuration with the given hooks and returns
// a session using it. Each hook command may record its payload in the cwd.
func (e *env) hooked(hooks map[string][]string) string {
	e.t.Helper()
	a, _ := json.Marshal(map[string]any{"hooks": hooks, "max_steps": 5})
	e.write("a/hooked.json", string(a))
	return e.newSession("agent=hooked")
}

func (e *env) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.cwd, name))
	return string(b)
}

func TestHookAgentSpawnAndPreTurn(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Default: &llmtest.Turn{Text: "ok"}})
	s := e.hooked(map[string][]string{
		"agentSpawn": {"cat > spawn.json"},
		"preTurn":    {`if grep -q forbidden; then echo 'no forbidden topics' >&2; exit 2; fi`},
	})
	if wait, reply := e.ask(s, "hello"); wait != "idle\n" || reply != "ok\n" {
		t.Fatalf("wait %q reply %q", wait, reply)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(e.file("spawn.json")), &p); err != nil || p["hook"] != "agentSpawn" || p["prompt"] != "hello\n" {
		t.Errorf("agentSpawn payload %q (%v)", e.file("spawn.json"), err)
	}
	os.Remove(filepath.Join(e.cwd, "spawn.json"))
	e.ask(s, "again")
	if e.file("spawn.json") != "" {
		t.Error("agentSpawn ran on a later turn")
	}
	wait, _ := e.ask(s, "tell me something forbidden")
	if !strings.Contains(wait, "preTurn hook: no forbidden topics") {
		t.Errorf("blocked turn: wait = %q", wait)
	}
	if ev := e.events(s); strings.Count(ev, `"type":"hook"`) != 4 {
		t.Errorf("hook runs in events: %d, want 4\n%s", strings.Count(ev, `"type":"hook"`), ev)
	}
}

func TestHookPostTurnNextPrompt(t *testing.T) {
	e := newEnv(t, config.KindAnthropic, &llmtest.Script{Turns: []llmtest.Turn{{Text: "draft"}, {Text: "final"}}})
	s := e.hooked(map[string][]string{
		"postTurn": {`if grep -q '"reply":"draft'; then echo 'now polish it'; exit 2; fi`},
	})
	e.write("s/"+s+"/prompt", "write\n")
	if w := e.read("s/" + s + "/wait"); w != "idle\n" {
		t.Fatalf("wait = %q", w)
	}
	chat := e.read("s/" + s + "/chat")
	if !strings.Contains(chat, "user: now polish it") || !strings.HasSuffix(chat, "assistant: final\n") {
		t.Errorf("postTurn's stdout did not become the next prompt:\n%s", chat)
	}
}

func TestHookPreToolBlocksAndPostToolAppends(t *testing.T) {
	e := newEnv(t, config.KindOllama, &llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "rm -rf important"), llmtest.ExecuteCode("bash", "echo fine")}},
		{Text: "done"},
	}})
	s := e.hooked(map[string][]string{
		"preTool":  {`if grep -q 'rm -rf'; then echo 'no rm -rf here' >&2; exit 2; fi`},
		"postTool": {`echo '[checked by postTool]'`},
	})
	if _, reply := e.ask(s, "go"); reply != "done\n" {
		t.Fatalf("reply %q", reply)
	}
	reqs := e.llm.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if !strings.Contains(msgs[2].Text, "blocked by the preTool hook: no rm -rf here") {
		t.Errorf("blocked call's result: %q", msgs[2].Text)
	}
	if !strings.Contains(msgs[3].Text, "fine") || !strings.Contains(msgs[3].Text, "[checked by postTool]") {
		t.Errorf("postTool did not append to the result: %q", msgs[3].Text)
	}
	if n := strings.Count(e.read("s/"+s+"/chat"), "-> execute_code("); n != 2 {
		t.Errorf("%d calls shown", n)
	}
}

func TestHookCompactAndTurnError(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{
		Rules: []llmtest.Rule{{If: "Summarize this conversation", Then: llmtest.Turn{Text: "- summary"}},
			{If: "fail now", Then: llmtest.Turn{Status: 400}}},
		Default: &llmtest.Turn{Text: "ok"},
	})
	s := e.hooked(map[string][]string{
		"preCompact":  {`test -e allow-compact || { echo 'not yet' >&2; exit 2; }`},
		"postCompact": {"cat > postcompact.json"},
		"turnError":   {"cat > error.json"},
	})
	for _, q := range []string{"one", "two", "three"} {
		e.ask(s, q)
	}
	before := e.read("s/" + s + "/context")
	e.write("s/"+s+"/ctl", "compact")
	e.read("s/" + s + "/wait")
	if e.read("s/"+s+"/context") != before || e.file("postcompact.json") != "" {
		t.Fatal("compaction ran although preCompact blocked it")
	}
	os.WriteFile(filepath.Join(e.cwd, "allow-compact"), nil, 0644)
	e.write("s/"+s+"/ctl", "compact")
	e.read("s/" + s + "/wait")
	if e.read("s/"+s+"/context") == before || !strings.Contains(e.file("postcompact.json"), `"hook":"postCompact"`) {
		t.Error("compaction did not run, or postCompact did not")
	}
	if wait, _ := e.ask(s, "fail now"); !strings.HasPrefix(wait, "error") {
		t.Fatalf("wait = %q", wait)
	}
	if !strings.Contains(e.file("error.json"), `"hook":"turnError"`) {
		t.Errorf("turnError payload: %q", e.file("error.json"))
	}
}
