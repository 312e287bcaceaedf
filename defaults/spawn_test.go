package defaults_test

import (
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
)

// subagent_spawn's errors name the fix; "--" ends the flags and a bullet
// is a prompt; every answer comes under a header naming its job, so the
// answers of parallel branches stay apart.
func TestSubagentSpawnErrorsAndLabels(t *testing.T) {
	f := newTree(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `(\w+) please`, Then: llmtest.Turn{Text: "answer to {{1}}"}},
	}})
	s := f.newSession("spawner")
	fails(t, f.run(s, tool("subagent_spawn", "-agent", "nope", "hi")), "the daemon refused the sub-agent spec",
		"is there an agent 'nope'", "backends (name kind url default-model last):")
	fails(t, f.run(s, tool("subagent_spawn", "-backend", "nope", "hi")), "the daemon refused the sub-agent spec",
		"a sub-agent runs on this session's backend")
	fails(t, f.run(s, tool("subagent_spawn", "-x", "hi")), "unknown flag -x (a prompt starting with - goes after --)")
	fails(t, f.run(s, tool("subagent_spawn", "-n", "0", "hi")), "-n wants a positive number")
	fails(t, f.run(s, tool("subagent_spawn")), "no prompt")

	ok(t, f.run(s, tool("subagent_spawn", "- bullet please")), "=== sub-agent b/", ": - bullet please ===\nanswer to bullet\n")
	ok(t, f.run(s, tool("subagent_spawn", "--", "-n", "dash please")), "answer to dash")
	out := ok(t, f.run(s, map[string]any{"parallel": []map[string]any{
		tool("subagent_spawn", "first please"), tool("subagent_spawn", "second please")}}))
	for _, want := range []string{": first please ===\nanswer to first\n", ": second please ===\nanswer to second\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("parallel answers lack %q:\n%s", want, out)
		}
	}
	ok(t, f.run(s, tool("subagent_spawn", "-n", "2", "twice please")), "=== 1/2 ===\nanswer to twice\n=== 2/2 ===\nanswer to twice\n")
}

// chat_search --subagents finds what a sub-agent said, in b/<job>/<k>;
// without it, and from the sub-agent's own session, it is left out.
func TestChatSearchSubagents(t *testing.T) {
	f := newTree(t, &llmtest.Script{Rules: []llmtest.Rule{
		{If: `^secret of (\w+)`, Then: llmtest.Turn{Text: "the {{1}} lives in vault 7"}},
	}})
	s := f.newSession("asker")
	ok(t, f.run(s, tool("subagent_spawn", "secret of dragons")), "the dragons lives in vault 7")
	ok(t, f.run(s, tool("chat_search", "vault", "7")), "no earlier conversation has a line with: vault 7")
	out := ok(t, f.run(s, tool("chat_search", "vault", "7", "--subagents")), "== sub-agent b/", "2: assistant: the dragons lives in vault 7")
	rel := out[strings.Index(out, "b/"):]
	rel = rel[:strings.Index(rel, ",")]
	ok(t, f.run(s, tool("chat_search", "dragons", "--session", rel)), "1: user: secret of dragons")
}
