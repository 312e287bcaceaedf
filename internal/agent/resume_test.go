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

// restart stops e's daemon and starts another on the same configuration
// and scripted model, as a restart of ollie does.
func (e *env) restart() {
	e.t.Helper()
	e.st.Restart()
	e.d, e.fsys = e.st.D, e.st.Fsys
}

// A turn cut by a crash while its tool call ran is resumed with a result
// for that call, so the API accepts the history; the restart marker is
// written once, however often the daemon restarts after.
func TestResumeAnswersCutCall(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{{Text: "hello"}, {Text: "resumed"}}})
	s := e.newSession("")
	e.ask(s, "first")
	var id string
	for _, l := range strings.Split(e.read("s/"+s+"/cfg"), "\n") {
		if v, ok := strings.CutPrefix(l, "id="); ok {
			id = v
		}
	}
	e.fsys.Close()
	e.d.Close()
	// What a kill -9 during execute_code leaves: the prompt and the call
	// in the history, a turn_start as the last turn event.
	dir := filepath.Join(e.cfg.DataDir, "s", id)
	appendFile(t, filepath.Join(dir, "context.jsonl"),
		`{"role":"user","text":"run it"}`+"\n"+
			`{"role":"assistant","calls":[{"id":"call_cut","name":"execute_code","args":{"steps":[{"code":"sleep 60","language":"bash"}]}}]}`+"\n")
	appendFile(t, filepath.Join(dir, "events.jsonl"), `{"seq":100000,"type":"turn_start","data":{"resume":false}}`+"\n")
	e.restart()
	e.restart() // a second, clean restart writes no second marker
	if w := e.read("s/" + s + "/wait"); !strings.Contains(w, "interrupted by restart") {
		t.Fatalf("wait = %q", w)
	}
	e.write("s/"+s+"/ctl", "resume\n")
	if w := e.read("s/" + s + "/wait"); w != "idle\n" {
		t.Fatalf("wait after resume = %q\n%s", w, e.read("s/"+s+"/chat"))
	}
	reqs := e.llm.Requests()
	msgs := reqs[len(reqs)-1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != "tool" || last.CallID != "call_cut" || !strings.Contains(last.Text, "interrupted by a restart") {
		t.Fatalf("resumed request ends with %+v", last)
	}
	chat := e.read("s/" + s + "/chat")
	if n := strings.Count(chat, ":: interrupted by restart"); n != 1 {
		t.Errorf("%d restart markers in chat:\n%s", n, chat)
	}
	if n := strings.Count(e.read("s/"+s+"/context"), "interrupted by a restart"); n != 1 {
		t.Errorf("the synthesized result is in the history %d times", n)
	}
}

func appendFile(t *testing.T, name, data string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// A machine crash may leave the last record of context.jsonl and
// events.jsonl cut in the middle: the write was never acknowledged. After
// the restart the session works, its next turn sends the history without
// the torn record, and what it appends after it reads back whole.
func TestTornHistoryTail(t *testing.T) {
	e := newEnv(t, config.KindOpenAI, &llmtest.Script{Turns: []llmtest.Turn{{Text: "hello"}, {Text: "again"}}})
	s := e.newSession("")
	e.ask(s, "first")
	var id string
	for _, l := range strings.Split(e.read("s/"+s+"/cfg"), "\n") {
		if v, ok := strings.CutPrefix(l, "id="); ok {
			id = v
		}
	}
	e.fsys.Close()
	e.d.Close()
	dir := filepath.Join(e.cfg.DataDir, "s", id)
	appendFile(t, filepath.Join(dir, "context.jsonl"), `{"role":"user","text":"never acknow`)
	appendFile(t, filepath.Join(dir, "events.jsonl"), `{"seq":99,"type":"tu`)
	e.restart()
	if w, got := e.ask(s, "second"); w != "idle\n" || !strings.Contains(got, "again") {
		t.Fatalf("the turn after the restart: %q %q\n%s", w, got, e.read("s/"+s+"/chat"))
	}
	reqs := e.llm.Requests()
	var texts []string
	for _, m := range reqs[len(reqs)-1].Messages {
		texts = append(texts, m.Role+":"+strings.TrimSpace(m.Text))
	}
	if got, want := strings.Join(texts, "|"), "user:first|assistant:hello|user:second"; !strings.HasSuffix(got, want) || strings.Contains(got, "never") {
		t.Fatalf("the turn after the restart sent %s; want it to end %s", got, want)
	}
	for _, name := range []string{"context.jsonl", "events.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !json.Valid([]byte(line)) {
				t.Errorf("%s line %d is not JSON: %q", name, i+1, line)
			}
		}
	}
}
