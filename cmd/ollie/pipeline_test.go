package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// pipelineScript answers the prompts of the documented pipelines. Rules
// match the prompt and echo parts of it, so each stage's output shows
// what it was given. The two turns are the candidates u/optimize asks
// for; its judge picks the one asking for a complete program.
func pipelineScript() *llmtest.Script {
	return &llmtest.Script{
		Models: []llmtest.Model{{ID: "base"}, {ID: "MODEL_A"}, {ID: "MODEL_B"}},
		Rules: []llmtest.Rule{
			{If: `(?s)^what caused this\?\n\n(.*?)\n*$`, Then: llmtest.Turn{Text: "the cause: {{1}}"}},
			{If: `(?s)^suggest a fix\n\n(.*?)\n*$`, Then: llmtest.Turn{Text: "the fix for [{{1}}]"}},
			{If: `^say hello\n*$`, Then: llmtest.Turn{Text: "hello"}},
			{If: `(?s)^translate to japanese: (.*?)\n*$`, Then: llmtest.Turn{Text: "こんにちは ({{1}})"}},
			{If: `(?s)^Which of the candidate prompts.*Candidate (\d+):\n[^\n]*complete`, Then: llmtest.Turn{Text: "Candidate {{1}} is the best."}},
			{If: `(?s)^Write a complete C\+\+ program`, Then: llmtest.Turn{Text: "#include <iostream>\nint main() { std::cout << \"Hello, world!\\n\"; }"}},
			{If: `^list three colors\n*$`, Then: llmtest.Turn{Text: "red\ngreen\nblue"}},
			{If: `(?s)^pick the second\n\n[^\n]*\n([^\n]*)`, Then: llmtest.Turn{Text: "{{1}}"}},
			{If: `(?s)^shout\n\n(.*?)\n*$`, Then: llmtest.Turn{Text: "{{1}}!"}},
			{If: `^name a fruit\n*$`, Then: llmtest.Turn{Text: "apple"}},
			{If: `(?s)^count the answers\n\n.*=== 4/4 ===\napple\n`, Then: llmtest.Turn{Text: "4 answers"}},
			{If: `(?s)^say it twice\n\n(.*?)\n*$`, Then: llmtest.Turn{Text: "{{1}} {{1}}"}},
			{If: `(?s)^summarize\n\n.*(the end of the log)\n*$`, Then: llmtest.Turn{Text: "a long log that ends with {{1}}"}},
			{If: `please fail`, Then: llmtest.Turn{Status: 400}},
			{If: `(?s)take your time`, Then: llmtest.Turn{Calls: []llmtest.Call{llmtest.ExecuteCode("sh", "sleep 30")}}},
		},
		Turns: []llmtest.Turn{
			{Text: "Write a hello world program in C++."},
			{Text: "Write a complete C++ program that prints Hello, world! to standard output."},
		},
	}
}

// TestDocumentedPipelines runs the three pipelines of the design, verbatim,
// in sh (dash, as scripts run) and in bash (as a user types them).
func TestDocumentedPipelines(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	os.WriteFile(filepath.Join(e.cwd, "err.log"), []byte("disk full on /var\n"), 0644)
	for _, shell := range []string{"sh", "bash"} {
		if got := e.ok(shell, `cat err.log | s/bfg 'what caused this?' | s/bfg 'suggest a fix'`); got != "the fix for [the cause: disk full on /var]\n" {
			t.Errorf("%s: cat err.log | bfg | bfg = %q", shell, got)
		}
		if got := e.ok(shell, "echo 'translate to japanese: '`echo 'say hello' | s/bfg` | s/bfg"); got != "こんにちは (hello)\n" {
			t.Errorf("%s: nested bfg = %q", shell, got)
		}
	}
	// bfg is foreground on the session of the directory: every stage above
	// used the one the first made.
	if ids := e.sessions(); len(ids) != 1 {
		t.Errorf("sessions after the bfg pipelines: %v, want one", ids)
	}

	got := e.ok("bash", `u/optimize -n 2 -cm MODEL_A -jm MODEL_B 'generate a hello world program. use c++.' 2>/dev/null | b/q`)
	if want := "#include <iostream>\nint main() { std::cout << \"Hello, world!\\n\"; }\n"; got != want {
		t.Errorf("u/optimize | b/q = %q, want %q", got, want)
	}
	texts, models := e.userTexts()
	var cand, judge, final []string
	for i, text := range texts {
		switch {
		case strings.HasPrefix(text, "Write a prompt"):
			cand = append(cand, models[i])
			if !strings.Contains(text, "generate a hello world program. use c++.") {
				t.Errorf("candidate prompt lacks the task: %q", text)
			}
		case strings.HasPrefix(text, "Which of the candidate prompts"):
			judge = append(judge, models[i])
		case strings.HasPrefix(text, "Write a complete C++ program"):
			final = append(final, models[i])
		}
	}
	if strings.Join(cand, " ") != "MODEL_A MODEL_A" || strings.Join(judge, " ") != "MODEL_B" || len(final) != 1 || final[0] == "MODEL_A" || final[0] == "MODEL_B" {
		t.Errorf("models asked: candidates %v, judge %v, the best prompt %v", cand, judge, final)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.mnt, "b")); len(ents) != 2 {
		t.Errorf("b/ after the pipeline has %d entries, want new and q: the jobs are removed", len(ents))
	}
}

// TestOptimizeShowsProgress checks that u/optimize says what it does on
// standard error and prints only the prompt on standard output.
func TestOptimizeShowsProgress(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	out, errs, code := e.run("sh", `u/optimize -n 2 -cm MODEL_A -jm MODEL_B 'generate a hello world program. use c++.'`, "")
	if code != 0 || out != "Write a complete C++ program that prints Hello, world! to standard output.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, want := range []string{"u/optimize: writing 2 candidate prompts with MODEL_A\n", "u/optimize: judging them with MODEL_B\n", "u/optimize: candidate "} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestThreeStagePipelines(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	if got := e.ok("bash", `s/b 'list three colors' | s/bfg -new 'pick the second' | b/q 'shout'`); got != "green!\n" {
		t.Errorf("s/b | s/bfg -new | b/q = %q", got)
	}
	// s/b removed its session and b/q its job (their transcripts are in
	// tr/, the job member's named by its job); bfg -new kept its session.
	if ids := e.sessions(); len(ids) != 1 {
		t.Errorf("sessions left: %v, want the one of bfg -new", ids)
	}
	trs, _ := filepath.Glob(filepath.Join(e.mnt, "tr", "*.chat"))
	members, _ := filepath.Glob(filepath.Join(e.mnt, "tr", "*-b*-1.chat"))
	if len(trs) != 2 || len(members) != 1 {
		t.Errorf("transcripts: %v, want the one of s/b and the one of b/q's member", trs)
	}

	want := "=== 1/4 ===\napple\n=== 2/4 ===\napple\n=== 3/4 ===\napple\n=== 4/4 ===\napple\n"
	if got := e.ok("sh", `s/b -parallel 4 'name a fruit'`); got != want {
		t.Errorf("s/b -parallel 4 = %q, want %q", got, want)
	}
	if got := e.ok("bash", `s/b -parallel 4 'name a fruit' | b/q 'count the answers' | s/b 'say it twice'`); got != "4 answers 4 answers\n" {
		t.Errorf("parallel pipeline = %q", got)
	}
	if got := e.ok("sh", `echo 'name a fruit' | b/q -parallel 4`); got != want {
		t.Errorf("b/q -parallel 4 = %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.mnt, "b")); len(ents) != 2 {
		t.Errorf("b/ has %d entries, want new and q", len(ents))
	}
}

// TestPromptFromArgsAndStdin: arguments, then a blank line, then standard
// input, even when that is long (several 9P messages).
func TestPromptFromArgsAndStdin(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	big := strings.Repeat("a line of a long log, repeated to make it large\n", 3000) + "the end of the log\n"
	os.WriteFile(filepath.Join(e.cwd, "big.log"), []byte(big), 0644)
	for _, line := range []string{`s/b summarize < big.log`, `cat big.log | b/q summarize`, `s=$(cat big.log | s/bbg summarize) && cat "$s/wait" >/dev/null && cat "$s/reply"`} {
		if got := e.ok("sh", line); got != "a long log that ends with the end of the log\n" {
			t.Errorf("%s: %q", line, got)
		}
	}
	texts, _ := e.userTexts()
	for _, text := range texts {
		if text != "summarize\n\n"+big {
			t.Errorf("the model got a prompt of %d bytes, want %d", len(text), len("summarize\n\n"+big))
		}
	}
	if got := e.ok("sh", `printf 'say hello' | s/b`); got != "hello\n" {
		t.Errorf("a prompt without a final newline: %q", got)
	}
}

func TestFailedTurnExitStatus(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	for _, c := range []struct{ line, stdout, stderr string }{
		{`s/b 'please fail'`, "", "s/b: error: bad request"},
		{`s/bfg 'please fail'`, "", "s/bfg: error: bad request"},
		{`b/q 'please fail'`, "", "b/q: error: bad request"},
		{`b/q -parallel 2 'please fail'`, "=== 1/2 error ===", "b/q: 2 of 2 failed"},
		{`u/optimize -n 2 'please fail'`, "", "no candidate was written"},
		{`s/b 'please fail' | s/b 'say hello'; exit ${PIPESTATUS[0]}`, "hello\n", "s/b: error"},
	} {
		out, errs, code := e.run("bash", c.line, "")
		if code != 1 || !strings.HasPrefix(out, c.stdout) || (c.stdout == "" && out != "") || !strings.Contains(errs, c.stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1, stdout %q, stderr with %q", c.line, code, out, errs, c.stdout, c.stderr)
		}
	}
	// The session of a failed bfg turn answers the next prompt.
	if got := e.ok("sh", `s/bfg 'say hello'`); got != "hello\n" {
		t.Errorf("after a failed turn: %q", got)
	}
	for _, c := range []struct {
		line string
		code int
		msg  string
	}{
		{`s/bfg -s nosuch 'say hello'`, 1, "no session nosuch"},
		{`s/b </dev/null`, 2, "no prompt"},
		{`s/b -bogus hi`, 2, "usage: s/b"},
		{`s/bfg -parallel x hi`, 2, "usage: s/bfg"},
		{`b/q -parallel 0 hi`, 2, "usage: b/q"},
		{`u/optimize -n`, 2, "usage: u/optimize"},
		{`s/kill`, 2, "usage: s/kill"},
		{`s/cleanup 3x`, 2, "usage: s/cleanup"},
		{`s/bfg -new -model 'bad
model' 'say hello'`, 1, "s/new refused"},
	} {
		out, errs, code := e.run("sh", c.line, "")
		if code != c.code || out != "" || !strings.Contains(errs, c.msg) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", c.line, code, out, errs, c.code, c.msg)
		}
	}
}

// TestScriptsFindTheTree runs the scripts by their path in the tree, and
// a copy elsewhere through $OLLIE.
func TestScriptsFindTheTree(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	if got := e.ok("sh", `"$OLLIE/s/b" 'say hello'`); got != "hello\n" {
		t.Errorf("$OLLIE/s/b = %q", got)
	}
	if got := e.ok("sh", `cp "$OLLIE/b/q" "$TMPDIR/q" && "$TMPDIR/q" 'say hello'`); got != "hello\n" {
		t.Errorf("a copy of b/q with $OLLIE = %q", got)
	}
	out, errs, code := e.run("sh", `cp "$OLLIE/s/bfg" "$TMPDIR/bfg" && OLLIE=$TMPDIR/nowhere "$TMPDIR/bfg" 'say hello'`, "")
	if code != 1 || out != "" || !strings.Contains(errs, "no ollie tree at "+e.root+"/nowhere: is the daemon running?") {
		t.Errorf("no tree: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestSessionScripts: s/bbg, s/ls, s/kill, s/cleanup.
func TestSessionScripts(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	s := strings.TrimSpace(e.ok("sh", `s/bbg 'say hello'`))
	if filepath.Dir(s) != filepath.Join(e.mnt, "s") {
		t.Fatalf("s/bbg printed %q, want a session path in %s/s", s, e.mnt)
	}
	id := filepath.Base(s)
	if got := e.ok("sh", `s=$(s/bbg -s `+id+` 'say hello') && cat "$s/wait" "$s/reply"`); got != "idle\nhello\n" {
		t.Errorf("bbg -s, wait, reply: %q", got)
	}
	ls := e.ok("sh", `s/ls`)
	if want := id + "\t-\tidle\tbase\t" + e.cwd + "\tsay hello\n"; ls != want { // the model in use: the backend's first
		t.Errorf("s/ls = %q, want %q", ls, want)
	}
	if got := e.ok("sh", `s/ls .`); got != ls {
		t.Errorf("s/ls . = %q", got)
	}
	if got := e.ok("sh", `s/ls /`); got != "" {
		t.Errorf("s/ls / = %q", got)
	}
	if j := strings.TrimSpace(e.ok("sh", `s/bbg -parallel 2 'say hello'`)); filepath.Dir(j) != filepath.Join(e.mnt, "b") {
		t.Errorf("s/bbg -parallel printed %q, want a job path", j)
	} else if got := e.ok("sh", `cat `+j+`/result && rm -r `+j); got != "=== 1/2 ===\nhello\n=== 2/2 ===\nhello\n" {
		t.Errorf("job result %q", got)
	}

	// A slow turn (a tool call sleeping) is stopped by kill -stop, ended by kill.
	slow := strings.TrimSpace(e.ok("sh", `s/bbg 'take your time'`))
	waitState(t, e, slow, "calling execute_code")
	e.ok("sh", `s/kill -stop `+slow)
	if st := e.read("s/" + filepath.Base(slow) + "/state"); st != "idle\n" {
		t.Errorf("state after kill -stop: %q", st)
	}
	if chat := e.read("s/" + filepath.Base(slow) + "/chat"); !strings.Contains(chat, ":: stopped") {
		t.Errorf("chat after kill -stop:\n%s", chat)
	}
	e.ok("sh", `s=`+slow+`; echo 'take your time' >$s/prompt`)
	waitState(t, e, slow, "calling execute_code")
	e.ok("sh", `s/kill `+slow)
	if ids := e.sessions(); len(ids) != 1 || ids[0] != id {
		t.Errorf("sessions after kill: %v, want only %s", ids, id)
	}
	if _, errs, code := e.run("sh", `s/kill nosuch`, ""); code != 1 || !strings.Contains(errs, "no session nosuch") {
		t.Errorf("kill nosuch: exit %d, %q", code, errs)
	}

	// cleanup: nothing is an hour old; everything idle is older than 0s,
	// but not a running session.
	running := strings.TrimSpace(e.ok("sh", `s/bbg 'take your time'`))
	waitState(t, e, running, "calling execute_code")
	if got := e.ok("sh", `s/cleanup 1h`); got != "" {
		t.Errorf("cleanup 1h removed %q", got)
	}
	dry := e.ok("sh", `s/cleanup -n -t 0`)
	if !strings.Contains(dry, "s/"+id+"\n") || strings.Contains(dry, filepath.Base(running)) || !strings.Contains(dry, "tr/"+filepath.Base(slow)+".chat\n") {
		t.Errorf("cleanup -n 0 listed:\n%s", dry)
	}
	if ids := e.sessions(); len(ids) != 2 {
		t.Errorf("cleanup -n removed sessions: %v", ids)
	}
	// Without -t, transcripts are kept.
	if got := e.ok("sh", `s/cleanup -n 0`); strings.Contains(got, "tr/") {
		t.Errorf("cleanup -n 0 would remove transcripts:\n%s", got)
	}
	// With -t it also removes the transcripts of the sessions it just ended.
	got := e.ok("sh", `s/cleanup -t 0s`)
	for _, line := range strings.Split(strings.TrimSpace(dry), "\n") {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("cleanup 0s did not remove %s:\n%s", line, got)
		}
	}
	if trs, _ := os.ReadDir(filepath.Join(e.mnt, "tr")); len(trs) != 0 {
		t.Errorf("tr/ after cleanup 0s: %d files", len(trs))
	}
	if ids := e.sessions(); len(ids) != 1 || ids[0] != filepath.Base(running) {
		t.Errorf("after cleanup: %v, want the running session only", ids)
	}
	e.ok("sh", `s/kill `+running)
}

// waitState waits until a session's state is st.
func waitState(t *testing.T, e *frontEnv, session, st string) {
	t.Helper()
	for i := 0; ; i++ {
		b, _ := os.ReadFile(filepath.Join(session, "state"))
		if string(b) == st+"\n" {
			return
		}
		if i > 500 {
			t.Fatalf("%s: state %q, want %q", session, b, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInterruptStopsTheTurn: Ctrl-C on s/bfg (SIGINT to its process
// group, as a terminal sends it) stops the session's turn.
func TestInterruptStopsTheTurn(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	for _, script := range []string{"s/bfg", "s/b", "b/q"} {
		// Started directly, as an interactive shell does: a shell -c
		// between would die of the SIGINT itself.
		cmd := exec.Command(filepath.Join(e.cwd, script), "take your time")
		cmd.Dir, cmd.Env = e.cwd, e.env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		errb := &testutil.LogBuf{}
		cmd.Stderr = errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The script names its session (or job) on stderr once it asked.
		var dir string
		for i := 0; dir == ""; i++ {
			if i > 500 {
				t.Fatalf("%s did not say where it asks: %q", script, errb.String())
			}
			time.Sleep(10 * time.Millisecond)
			if _, where, ok := strings.Cut(errb.String(), ": "); ok && strings.HasSuffix(where, "\n") {
				dir = filepath.Join(e.mnt, strings.TrimSpace(where))
			}
		}
		member := dir
		if script == "b/q" {
			member = filepath.Join(dir, "1")
		}
		waitState(t, e, member, "calling execute_code")
		chat := filepath.Join(member, "chat")
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("%s after Ctrl-C: %v, want exit status 130", script, err)
		}
		switch script {
		case "s/bfg":
			if b, _ := os.ReadFile(chat); !strings.Contains(string(b), ":: stopped") {
				t.Errorf("%s: the turn was not stopped:\n%s", script, b)
			}
		default: // one-shots remove what they made
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s left %s behind", script, dir)
			}
		}
	}
}

// TestModelAndBackendFlags: -model and -backend choose what answers; on
// an existing session s/bfg sets them in its cfg.
func TestModelAndBackendFlags(t *testing.T) {
	t.Parallel() // each has a daemon, a mount and a model of its own
	e := newFrontEnv(t, pipelineScript())
	for _, line := range []string{
		`s/b -model MODEL_A 'say hello'`,
		`b/q -model MODEL_A -backend ollama 'say hello'`,
		`s/b -parallel 2 -model MODEL_A 'say hello' >/dev/null && echo hello`,
		`s/bbg -model MODEL_A 'say hello' | sed 's,$,/reply,' | { read -r r; cat "${r%/reply}/wait" >/dev/null; cat "$r"; }`,
	} {
		if got := e.ok("sh", line); got != "hello\n" {
			t.Errorf("%s: %q", line, got)
		}
	}
	e.ok("sh", `s/bfg -new 'say hello'`)
	if got := e.ok("sh", `s/bfg -model MODEL_B 'say hello'`); got != "hello\n" {
		t.Errorf("bfg -model on the session of the directory: %q", got)
	}
	_, models := e.userTexts()
	if want := "MODEL_A MODEL_A MODEL_A MODEL_A MODEL_A base MODEL_B"; strings.Join(models, " ") != want {
		t.Errorf("models asked: %v, want %s", models, want)
	}
	if cfg := e.ok("sh", `cat s/$(s/ls . | cut -f 1 | tail -n 1)/cfg`); !strings.Contains(cfg, "model=MODEL_B\n") {
		t.Errorf("the session's cfg after bfg -model:\n%s", cfg)
	}
	for _, line := range []string{`s/b -backend nosuch 'say hello'`, `b/q -backend nosuch 'say hello'`, `s/bfg -backend nosuch 'say hello'`} {
		if out, errs, code := e.run("sh", line, ""); code != 1 || out != "" || errs == "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", line, code, out, errs)
		}
	}
}
