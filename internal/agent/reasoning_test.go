package agent_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
)

// The agent's reasoning setting reaches the request; a model that refuses
// it (Ollama: "... does not support thinking") is asked again at once
// without it, said once in chat and events, and never sent it again.
func TestReasoningRefusedLearned(t *testing.T) {
	e := newEnv(t, config.KindOllama, &llmtest.Script{Turns: []llmtest.Turn{
		{Status: 400, Raw: `{"error":"\"llama3.2:latest\" does not support thinking"}`},
		{Text: "Hello."},
		{Text: "Again."},
	}})
	e.write("a/thinker.json", `{"reasoning": "high"}`)
	s := e.newSession("agent=thinker")
	if wait, reply := e.ask(s, "hi"); wait != "idle\n" || reply != "Hello.\n" {
		t.Fatalf("wait %q reply %q", wait, reply)
	}
	e.ask(s, "more")
	reqs := e.llm.Requests()
	var chats [][]byte
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/api/chat") {
			chats = append(chats, r.Body)
		}
	}
	if len(chats) != 3 {
		t.Fatalf("%d chat requests, want 3", len(chats))
	}
	if got := gjson.GetBytes(chats[0], "think").Raw; got != "true" {
		t.Errorf("first request: think = %q, want true", got)
	}
	for i, b := range chats[1:] {
		if gjson.GetBytes(b, "think").Exists() {
			t.Errorf("request %d still sends think: %s", i+2, b)
		}
	}
	chat := e.read("s/" + s + "/chat")
	if n := strings.Count(chat, "takes no reasoning setting"); n != 1 {
		t.Errorf("the refusal is said %d times:\n%s", n, chat)
	}
	if strings.Contains(chat, "retrying") {
		t.Errorf("a refused parameter was retried as a server failure:\n%s", chat)
	}
	if ev := e.events(s); strings.Count(ev, `"type":"reasoning_rejected"`) != 1 {
		t.Errorf("events:\n%s", ev)
	}
}
