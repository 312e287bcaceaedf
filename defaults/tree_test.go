package defaults_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

func TestMemory(t *testing.T) {
	f := newTree(t, nil)
	a := f.newSession("alpha")
	note := filepath.Join(f.mnt, "m", "deploy-steps-for-shop.md")

	ok(t, f.run(a, code("sh", "printf 'run make deploy\\nthen check the logs\\n'"),
		tool("memory_remember", "Deploy steps for Shop", "deploy", "ops,shop")), "remembered "+note)
	ok(t, f.run(a, tool("memory_remember", "Postgres port", "db", "--body", "staging listens on 5433")),
		"remembered "+filepath.Join(f.mnt, "m", "postgres-port.md"))
	// On disk, durable, in the data directory: outside any session.
	b, err := os.ReadFile(filepath.Join(f.cfg.DataDir, "m", "deploy-steps-for-shop.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "---\ntitle: Deploy steps for Shop\ntags: deploy, ops, shop\ndate: ") ||
		!strings.HasSuffix(string(b), "---\nrun make deploy\nthen check the logs\n") {
		t.Errorf("note file:\n%s", b)
	}

	// The same title is not overwritten by accident.
	fails(t, f.run(a, tool("memory_remember", "Deploy steps for Shop", "--body", "x")), "already exists", "--append", "--replace")
	ok(t, f.run(a, tool("memory_remember", "Deploy steps for Shop", "rollback", "--append", "--body", "rollback: make undeploy")),
		"appended to "+note)

	// Recall, from another session: notes outlive the session that wrote them.
	f.endSession("alpha")
	c := f.newSession("beta")
	out := ok(t, f.run(c, tool("memory_recall", "deploy", "logs")), "== "+note, "Deploy steps for Shop  [deploy, ops, shop, rollback]",
		"then check the logs", "rollback: make undeploy")
	if strings.Contains(out, "5433") {
		t.Errorf("recall of deploy shows the postgres note:\n%s", out)
	}
	ok(t, f.run(c, tool("memory_recall", "--tag", "db")), "1 note in", "Postgres port  [db]")
	ok(t, f.run(c, tool("memory_recall", "POSTGRES")), "staging listens on 5433")
	ok(t, f.run(c, tool("memory_recall", "postgres", "undeploy")), "no note has all of: postgres undeploy; notes with some")
	out = ok(t, f.run(c, tool("memory_recall")), "2 notes in "+filepath.Join(f.mnt, "m"), "Postgres port", "Deploy steps for Shop")
	if strings.Contains(out, "5433") {
		t.Errorf("a listing shows bodies:\n%s", out)
	}
	ok(t, f.run(c, tool("memory_recall", "kubernetes")), "no notes match kubernetes (2 notes in")

	// A user's own file in m/, without front matter, is a note too.
	if err := os.WriteFile(filepath.Join(f.cfg.DataDir, "m", "vpn.txt"), []byte("the vpn is wg0\n"), 0644); err != nil {
		t.Fatal(err)
	}
	ok(t, f.run(c, tool("memory_recall", "vpn")), "vpn.txt  -  vpn\nthe vpn is wg0")

	// Bad input.
	fails(t, f.run(c, tool("memory_remember")), "usage: memory_remember TITLE")
	fails(t, f.run(c, tool("memory_remember", "Empty")), "no body")
	fails(t, f.run(c, tool("memory_remember", "x", "--frobnicate")), "unknown option --frobnicate")
	fails(t, f.run(c, tool("memory_recall", "--max", "0")), "--max wants a positive number")
	fails(t, f.run("", tool("memory_recall", "x")), "$OLLIE is not set")
}

func TestMemoryLotsOfNotes(t *testing.T) {
	f := newTree(t, nil)
	s := f.newSession("many")
	// Written as memory_remember writes them, straight to disk: the
	// point is how recall copes with many.
	for i := 0; i < 120; i++ {
		note := fmt.Sprintf("---\ntitle: note %03d\ntags: bulk\ndate: 2026-01-01\n---\nbody of %d\n", i, i)
		testutil.WriteFile(t, filepath.Join(f.cfg.DataDir, "m"), fmt.Sprintf("note-%03d.md", i), note, 0644)
	}
	ok(t, f.run(s, tool("memory_recall")), "120 notes in", "[cut: 20 more; search with a QUERY or --tag]")
	out := ok(t, f.run(s, tool("memory_recall", "body", "--max", "3")), "more matches (read one with file_read PATH):")
	if n := strings.Count(out, "\n== "); n != 2 { // the first has no newline before it
		t.Errorf("%d notes shown whole, want 3:\n%s", n+1, out)
	}
}

func TestTasks(t *testing.T) {
	f := newTree(t, nil)
	s := f.newSession("work")
	plan := "s/" + s + "/plan"
	if err := f.fsys.WriteFile(ctx, plan, []byte("# Goal\nfix the login bug\n"), 0); err != nil {
		t.Fatal(err)
	}
	ok(t, f.run(s, tool("task_list")), "no tasks")
	ok(t, f.run(s, tool("task_add", "reproduce it", "write a test")), "1. [ ] reproduce it\n2. [ ] write a test\n(0 of 2 done)")
	ok(t, f.run(s, code("sh", "echo fix it; echo; echo ship it"), tool("task_add")), "3. [ ] fix it\n4. [ ] ship it\n")
	ok(t, f.run(s, tool("task_check", "1", "2")), "1. [x] reproduce it\n2. [x] write a test\n", "(2 of 4 done)")
	ok(t, f.run(s, tool("task_check", "2", "--undo")), "2. [ ] write a test")
	want := "# Goal\nfix the login bug\n\n## Tasks\n\n- [x] reproduce it\n- [ ] write a test\n- [ ] fix it\n- [ ] ship it\n"
	if got := readTree(t, f, plan); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	// The plan is the session's: what a user writes there stays.
	if err := f.fsys.WriteFile(ctx, plan, []byte(want+"\nremember: the bug is in auth.go\n"), 0); err != nil {
		t.Fatal(err)
	}
	ok(t, f.run(s, tool("task_add", "deploy")), "5. [ ] deploy")
	ok(t, f.run(s, tool("task_clear", "--done")), "removed 1 task; 4 left\n1. [ ] ", "(0 of 4 done)")
	ok(t, f.run(s, tool("task_list")), "1. [ ] write a test", "4. [ ] deploy\n(0 of 4 done)")
	ok(t, f.run(s, tool("task_clear")), "removed 4 tasks; 0 left")
	if got := readTree(t, f, plan); got != "# Goal\nfix the login bug\n\n## Tasks\n\nremember: the bug is in auth.go\n" {
		t.Errorf("plan after clear:\n%q", got)
	}

	// Bad input.
	ok(t, f.run(s, tool("task_add", "one")), "1. [ ] one")
	fails(t, f.run(s, tool("task_check", "3")), "no task 3: there is 1")
	fails(t, f.run(s, tool("task_check", "first")), "want task numbers")
	fails(t, f.run(s, tool("task_check")), "usage: task_check N")
	fails(t, f.run(s, tool("task_add")), "no task given")
	fails(t, f.run(s, tool("task_clear", "all")), "usage: task_clear [--done]")
	fails(t, f.run("", tool("task_list")), "$OLLIE_SESSION is not set")
	// Another session's plan is out of reach: tools write only their own.
	other := f.newSession("other")
	fails(t, f.runEnv(s, []string{"OLLIE_SESSION=" + f.mnt + "/s/" + other}, tool("task_add", "sneak")), "ermission denied")
	if got := readTree(t, f, "s/"+other+"/plan"); got != "" {
		t.Errorf("another session's plan was written: %q", got)
	}
}

func TestReasoningThink(t *testing.T) {
	f := newTree(t, nil)
	s := f.newSession("thinker")
	plan := "s/" + s + "/plan"
	out := ok(t, f.run(s, tool("reasoning_think", "The failing test needs a clock; inject one.")), "thought noted (8 words); go on.")
	if strings.Contains(out, "clock") {
		t.Errorf("the thought is echoed back: %s", out)
	}
	if got := readTree(t, f, plan); got != "" {
		t.Errorf("a plain thought went to the plan: %q", got)
	}
	ok(t, f.run(s, tool("task_add", "inject a clock")))
	ok(t, f.run(s, code("sh", "printf 'auth.go caches\\nthe token'"), tool("reasoning_think", "--plan")), "thought noted (4 words), kept in the plan")
	ok(t, f.run(s, tool("reasoning_think", "--plan", "second note")))
	ok(t, f.run(s, tool("task_add", "rerun")))
	want := "## Tasks\n\n- [ ] inject a clock\n- [ ] rerun\n\n## Notes\n\n- auth.go caches the token\n- second note\n"
	if got := readTree(t, f, plan); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	fails(t, f.run(s, tool("reasoning_think")), "no thought given")
	fails(t, f.run("", tool("reasoning_think", "x", "--plan")), "$OLLIE_SESSION is not set")
}

func TestChatSearch(t *testing.T) {
	f := newTree(t, &llmtest.Script{
		Rules: []llmtest.Rule{
			{If: `^look up (\w+)`, Then: llmtest.Turn{Calls: []llmtest.Call{callTool("chat_search", "{{1}}")}}},
			{If: "nginx", Then: llmtest.Turn{Text: "The nginx config for the shop is in /etc/nginx/sites-enabled/shop."}},
			{If: "postgres", Then: llmtest.Turn{Text: "Postgres runs on port 5433 on staging."}},
			{Role: "tool", If: ".", Then: llmtest.Turn{Text: "searched"}},
		},
		Default: &llmtest.Turn{Text: "ok"},
	})
	ask := func(s, q string) {
		t.Helper()
		if err := f.fsys.WriteFile(ctx, "s/"+s+"/prompt", []byte(q+"\n"), 0); err != nil {
			t.Fatal(err)
		}
		if w := readTree(t, f, "s/"+s+"/wait"); w != "idle\n" {
			t.Fatalf("wait = %q", w)
		}
	}
	a := f.newSession("web")
	ask(a, "where is the nginx config?")
	ask(a, "thanks")
	b := f.newSession("db")
	ask(b, "which port does postgres use?")
	f.endSession("db") // its chat is a transcript in tr/ now
	me := f.newSession("now")
	ask(me, "what did we say about the nginx config?")

	out := ok(t, f.run(me, tool("chat_search", "nginx", "config")),
		"== session "+a+" (web), ", ": 2 matches\n",
		"  1: user: where is the nginx config?\n  2: assistant: The nginx config for the shop is in /etc/nginx/sites-enabled/shop.\n  3- user: thanks\n")
	if strings.Contains(out, "what did we say") {
		t.Errorf("the searching session is searched:\n%s", out)
	}
	ok(t, f.run(me, tool("chat_search", "PORT", "5433")), "== transcript "+b+"-db, ", "tr/"+b+"-db.chat",
		"  1- user: which port does postgres use?\n  2: assistant: Postgres runs on port 5433 on staging.\n")
	ok(t, f.run(me, tool("chat_search", "postgres", "--session", "db", "--context", "0")), "  1: user: which port does postgres use?\n  2: assistant: Postgres")
	ok(t, f.run(me, tool("chat_search", "kubernetes")), "no earlier conversation has a line with: kubernetes (2 searched)")

	// A search the model ran is in its chat, call and output; searching
	// that chat later does not find the old hits again.
	ask(me, "look up nginx")
	if chat := readTree(t, f, "s/"+me+"/chat"); !strings.Contains(chat, "== session "+a+" (web)") {
		t.Fatalf("the model's search found nothing:\n%s", chat)
	}
	out = ok(t, f.run(me, tool("chat_search", "nginx", "--session", me)), ": 3 matches", "  3: user: look up nginx")
	if strings.Contains(out, "(web)") {
		t.Errorf("an earlier search's output was matched:\n%s", out)
	}

	// Capped: a long conversation shows a few matches and says how to see more.
	for i := 0; i < 8; i++ {
		ask(a, fmt.Sprintf("nginx question %d", i))
	}
	ok(t, f.run(me, tool("chat_search", "nginx", "question")), ": 8 matches", "[3 more here: add --session "+a+" --max 8]")
	ok(t, f.run(me, tool("chat_search", "nginx", "--max", "2")), "[2 of ", " matches shown; add words to narrow, or raise --max]")

	// Bad input.
	fails(t, f.run(me, tool("chat_search")), "usage: chat_search QUERY")
	fails(t, f.run(me, tool("chat_search", "x", "--session", "nosuch")), "no session or transcript nosuch")
	fails(t, f.run(me, tool("chat_search", "x", "--max", "lots")), "--max wants a number")
	fails(t, f.run("", tool("chat_search", "x")), "$OLLIE is not set")
}

// readTree reads a file of the tree over 9P.
func readTree(t *testing.T, f *fixture, name string) string {
	t.Helper()
	b, err := f.fsys.ReadFile(ctx, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

// endSession ends a session as rm -r does: its transcript goes to tr/.
func (f *fixture) endSession(name string) {
	f.t.Helper()
	if err := f.fsys.Remove(ctx, "s/"+name); err != nil {
		f.t.Fatalf("end session %s: %v", name, err)
	}
}
