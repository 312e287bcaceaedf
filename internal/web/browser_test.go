package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// browser starts a headless Chromium (Debian's) for the test. In CI a
// missing chromium fails the test (testutil.Require).
func browser(t *testing.T) context.Context {
	t.Helper()
	testutil.Require(t, "chromium")
	path := "/usr/bin/chromium"
	if _, err := os.Stat(path); err != nil {
		path = "chromium"
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// do runs browser actions, failing the test on an error; a hang fails
// it after testutil.HangTimeout.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, testutil.HangTimeout)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, testutil.HangTimeout)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript condition in the page.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	testutil.Until(t, what, func() bool { return eval[bool](t, ctx, expr) })
}

// shot saves a screenshot of the page into the test's temporary
// directory (and into $OLLIE_WEB_SHOTS, where docs/ takes its pictures).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, testutil.HangTimeout)
	defer cancel()
	b, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{shotDir(t)}
	if d := os.Getenv("OLLIE_WEB_SHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name+".png"), b, 0644); err != nil {
			t.Fatal(err)
		}
	}
}

var shotDirs = map[*testing.T]string{}

func shotDir(t *testing.T) string {
	if d, ok := shotDirs[t]; ok {
		return d
	}
	d := t.TempDir()
	shotDirs[t] = d
	t.Logf("screenshots in %s", d)
	return d
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chatHas is a condition: the chat's text contains s.
func chatHas(s string) string {
	return `document.getElementById('chat').textContent.includes(` + js(s) + `)`
}

// drawnWhole is a condition: the session is idle and no block is still
// drawn from streamed tails (each is its rendered, sanitized HTML).
const drawnWhole = `document.getElementById('state').textContent === 'idle' && !document.querySelector('#chat .live')`

// typePrompt types a prompt into the box as a person would: a line,
// Shift+Enter, the next line, ..., then Enter.
func typePrompt(t *testing.T, ctx context.Context, lines ...string) {
	t.Helper()
	steps := []chromedp.Action[chromedp.Void]{chromedp.Focus(chromedp.ID("prompt"))}
	for i, l := range lines {
		steps = append(steps, chromedp.SendKeys(chromedp.ID("prompt"), l))
		if i < len(lines)-1 {
			steps = append(steps, chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)))
		}
	}
	steps = append(steps, chromedp.KeyEvent("\r"))
	do(t, ctx, steps...)
}

var pageScript = &llmtest.Script{
	Latency: llmtest.Duration(15 * time.Millisecond),
	Rules: []llmtest.Rule{
		{If: `^multi line one\nline two$`, Then: llmtest.Turn{Text: "Streamed **reply** that arrives in many small pieces, one after another, as a model writes it: " + strings.Repeat("more words ", 12) + "end of reply."}},
		{If: `^slow`, Then: llmtest.Turn{Text: "Running a long command.", Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "sleep 60")}}},
		{If: `^elev (\w+)`, Then: llmtest.Turn{Text: "Needs consent.", Calls: []llmtest.Call{{Name: "execute_code",
			Args: json.RawMessage(`{"steps":[{"code":"echo {{1}} > {{1}}.txt","language":"bash","elevated":true}]}`)}}}},
		{If: `^xss`, Then: llmtest.Turn{Text: "Look: <script>window.pwned=1</script> <img src=x onerror=\"window.pwned=2\"> " +
			"[click me](javascript:window.pwned=3) <a href=\"javascript:window.pwned=4\">or me</a> \x1b[31mred\x1b[0m after the attack"}},
	},
	Default: &llmtest.Turn{Text: "done"},
}

func TestBrowser(t *testing.T) {
	e := start(t, pageScript)
	ctx := browser(t)

	// Open the URL with the token: the cookie is set, the token leaves
	// the address bar.
	do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.ID("newform")))
	if loc := eval[string](t, ctx, "location.href"); strings.Contains(loc, "token") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}
	if c := eval[string](t, ctx, "document.cookie"); c != "" {
		t.Errorf("the page's script can read the cookie: %q", c)
	}
	// A request without the cookie gets 401 and nothing else.
	if r := eval[string](t, ctx, `fetch(document.documentElement.dataset.base + '/', {credentials: 'omit'}).then(async r => r.status + ' ' + await r.text())`, chromedp.EvalAwaitPromise); !strings.HasPrefix(r, "401 ") || strings.Contains(r, "<") {
		t.Errorf("GET / without the cookie: %q", r)
	}

	var id string
	t.Run("create", func(t *testing.T) {
		do(t, ctx, chromedp.SendKeys(chromedp.CSS("input[name=cwd]"), e.cwd), chromedp.SendKeys(chromedp.CSS("input[name=name]"), "webtest"),
			chromedp.Click(chromedp.CSS("#newform button[type=submit]")), chromedp.WaitVisible(chromedp.ID("prompt")))
		id = eval[string](t, ctx, "document.getElementById('session').dataset.id")
		if !strings.Contains(e.read("s/idx"), id+"\t") || !strings.Contains(e.read("s/"+id+"/cfg"), "name=webtest") {
			t.Fatalf("session %q not in the tree:\n%s", id, e.read("s/idx"))
		}
	})
	if id == "" {
		t.FailNow()
	}
	until(t, ctx, "the stream", "document.getElementById('session').dataset.ready === '1'")

	t.Run("prompt", func(t *testing.T) {
		do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.updates = 0; new MutationObserver(() => window.updates++).observe(document.getElementById('chat'), {subtree: true, childList: true, characterData: true})`))
		typePrompt(t, ctx, "multi line one", "line two")
		until(t, ctx, "the prompt in the chat", chatHas("multi line one\nline two"))
		until(t, ctx, "the whole reply", chatHas("end of reply."))
		until(t, ctx, "the reply drawn whole", drawnWhole)
		if got := eval[string](t, ctx, "document.querySelector('.k-assistant strong').textContent"); got != "reply" {
			t.Errorf("Markdown not rendered: <strong> = %q", got)
		}
		t.Logf("the chat changed %d times while the reply streamed", eval[int](t, ctx, "window.updates"))
		var prompts []string
		for _, r := range e.llm.Requests() {
			if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "user" {
				prompts = append(prompts, r.Messages[n-1].Text)
			}
		}
		if len(prompts) != 1 || prompts[0] != "multi line one\nline two" {
			t.Errorf("the model got %q, want one prompt of two lines", prompts)
		}
		if v := eval[string](t, ctx, "document.getElementById('prompt').value"); v != "" {
			t.Errorf("the prompt box keeps %q", v)
		}
		shot(t, ctx, "session")
	})

	t.Run("stop", func(t *testing.T) {
		typePrompt(t, ctx, "slow please")
		until(t, ctx, "the long command", "document.getElementById('state').textContent === 'calling execute_code'")
		until(t, ctx, "its call block", "!!document.querySelector('details.call')")
		do(t, ctx, chromedp.Click(chromedp.ID("stop")))
		until(t, ctx, "the turn stopped", "document.getElementById('state').textContent === 'idle'")
		if st := strings.TrimSpace(e.read("s/" + id + "/state")); st != "idle" {
			t.Errorf("state %q after Stop", st)
		}
	})

	t.Run("consent", func(t *testing.T) {
		for _, answer := range []string{"allow", "deny"} {
			word := answer + "ed1"
			typePrompt(t, ctx, "elev "+word)
			until(t, ctx, "the consent request", "!!document.querySelector('.ask')")
			text := eval[string](t, ctx, "document.querySelector('.ask pre').textContent")
			if !strings.Contains(text, "echo "+word+" > "+word+".txt") || !strings.Contains(text, "cwd: "+e.cwd) {
				t.Errorf("the request does not show what would run:\n%s", text)
			}
			if answer == "allow" {
				shot(t, ctx, "consent")
			}
			do(t, ctx, chromedp.Click(chromedp.CSS(".ask button[data-answer="+answer+"]")))
			until(t, ctx, "the request answered", "!document.querySelector('.ask')")
			until(t, ctx, "the turn over", "document.getElementById('state').textContent === 'idle'")
			_, err := os.Stat(filepath.Join(e.cwd, word+".txt"))
			if answer == "allow" && err != nil {
				t.Errorf("allowed, but the stage did not run: %v", err)
			}
			if answer == "deny" && err == nil {
				t.Errorf("denied, but the stage ran")
			}
		}
		until(t, ctx, "the denial in the chat", chatHas("elevation denied"))
	})

	t.Run("xss", func(t *testing.T) {
		do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.violations = []; document.addEventListener('securitypolicyviolation', e => window.violations.push(e.violatedDirective))`))
		typePrompt(t, ctx, "xss test")
		until(t, ctx, "the reply", chatHas("after the attack"))
		until(t, ctx, "the reply drawn whole", drawnWhole)
		for _, q := range []string{"#chat script", "#chat img", "#chat [onerror]", "#chat a[href^='javascript']"} {
			if n := eval[int](t, ctx, "document.querySelectorAll("+js(q)+").length"); n != 0 {
				t.Errorf("%d %s in the page", n, q)
			}
		}
		// Click every link of the reply: none may run anything.
		do(t, ctx, chromedp.Evaluate[chromedp.Void](`for (const a of document.querySelectorAll('#chat .k-assistant a')) a.click()`))
		if p := eval[string](t, ctx, "String(window.pwned)"); p != "undefined" {
			t.Errorf("a script of the reply ran: window.pwned = %s", p)
		}
		if !eval[bool](t, ctx, chatHas("␛[31mred␛[0m")) {
			t.Errorf("the escape sequence is not shown as text")
		}
		t.Logf("CSP violations reported: %s", eval[string](t, ctx, "JSON.stringify(window.violations)"))
		shot(t, ctx, "xss")
	})

	t.Run("memory", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(e.base+"/edit?new=m"), chromedp.WaitVisible(chromedp.ID("editform")),
			chromedp.SendKeys(chromedp.CSS("input[name=name]"), "note1"),
			chromedp.SendKeys(chromedp.CSS("textarea[name=text]"), "first version"),
			chromedp.Click(chromedp.CSS("#editform button[type=submit]")))
		until(t, ctx, "the editor of the new note", "location.search.includes('p=m%2Fnote1')")
		if got := e.read("m/note1"); got != "first version" {
			t.Fatalf("m/note1 = %q", got)
		}
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS("textarea[name=text]")),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('textarea[name=text]').value = ''`),
			chromedp.SendKeys(chromedp.CSS("textarea[name=text]"), "second version\nwith two lines"),
			chromedp.Click(chromedp.CSS("#editform button[type=submit]")))
		until(t, ctx, "saved", "document.getElementById('saved').textContent === 'saved'")
		if got := e.read("m/note1"); got != "second version\nwith two lines" {
			t.Errorf("m/note1 = %q", got)
		}
		shot(t, ctx, "edit")
		// An agent file the tree rejects: its error is shown, the file kept.
		before := e.read("a/default.json")
		do(t, ctx, chromedp.Navigate(e.base+"/edit?p=a/default.json"), chromedp.WaitVisible(chromedp.ID("editform")),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('textarea[name=text]').value = '{"bogus_key": 1}'`),
			chromedp.Click(chromedp.CSS("#editform button[type=submit]")))
		until(t, ctx, "the tree's error", "!document.getElementById('err').hidden")
		if msg := eval[string](t, ctx, "document.getElementById('err').textContent"); !strings.Contains(msg, "bogus_key") {
			t.Errorf("error shown: %q", msg)
		}
		if e.read("a/default.json") != before {
			t.Errorf("a rejected write changed a/default.json")
		}
		shot(t, ctx, "edit-error")
	})

	t.Run("pages", func(t *testing.T) {
		for _, p := range []struct{ name, path, ready string }{
			{"list", "/", "#sessions tbody tr"},
			{"files", "/files", ".dirs"},
			{"search", "/search?q=reply", ".hits li"},
			{"systemprompt", "/s/" + id + "/systemprompt", "pre.file"},
			{"context", "/s/" + id + "/context", "pre.file"},
		} {
			do(t, ctx, chromedp.Navigate(e.base+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
			shot(t, ctx, p.name)
		}
		// The list is live: a session a shell makes appears, and its state
		// follows the tree.
		do(t, ctx, chromedp.Navigate(e.base+"/"), chromedp.WaitVisible(chromedp.CSS("#sessions tbody tr")))
		other := e.newSession("fromshell")
		until(t, ctx, "the shell's session in the list", `!!document.querySelector('#sessions tr[data-id=`+js(other)+`]')`)
		if err := e.fsys.WriteFile(context.Background(), "s/"+other+"/prompt", []byte("slow again\n"), 0); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, "its state in the list", `document.querySelector('#sessions tr[data-id=`+js(other)+`] .state').textContent === 'calling execute_code'`)
		if err := e.fsys.WriteFile(context.Background(), "s/"+other+"/ctl", []byte("stop\n"), 0); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, "idle again in the list", `document.querySelector('#sessions tr[data-id=`+js(other)+`] .state').textContent === 'idle'`)

		// Dark mode: the same pages under prefers-color-scheme: dark.
		do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return err
		}))
		do(t, ctx, chromedp.Navigate(e.base+"/s/"+id), chromedp.WaitVisible(chromedp.CSS("#session[data-ready='1']")))
		if bg := eval[string](t, ctx, "getComputedStyle(document.body).backgroundColor"); bg != "rgb(21, 22, 26)" {
			t.Errorf("dark mode background %s", bg)
		}
		do(t, ctx, chromedp.Evaluate[chromedp.Void](`for (const d of document.querySelectorAll('details.call')) d.open = true`))
		shot(t, ctx, "session-dark")
		do(t, ctx, chromedp.Navigate(e.base+"/search?q=multi+line+one"), chromedp.WaitVisible(chromedp.CSS(".hits li a")))
		if got := eval[string](t, ctx, "document.querySelector('.hits li a').textContent"); got != "webtest" {
			t.Errorf("search hit in %q", got)
		}
	})
}
