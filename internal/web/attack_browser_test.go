package web_test

// Attacks on ollie web in a real Chromium: model text, tool output, file
// contents, a cwd and a consent request that carry markup, and another
// local server on the same loopback address. A payload that runs calls
// window.pwn (a binding to the test), sets window.pwned and logs PWNED;
// an injection that only the Content-Security-Policy stopped shows as a
// "Refused to" message on the console, and fails the test too: the
// sanitizer is the first lock, the CSP the second.

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/testutil"
)

// xssPayload tries every way into a page that the sanitizer, the
// templates and the page's script must close.
const xssPayload = `<script>pwn('script');window.pwned=1;console.log('PWNED script')</script>
<img src=x onerror="pwn('img')"> <svg onload="pwn('svg')"><circle r=1></circle></svg>
<iframe src="javascript:parent.pwn('iframe')"></iframe><iframe srcdoc="<script>parent.pwn('srcdoc')</script>"></iframe>
<style>body{display:none}*{visibility:hidden}</style><link rel=stylesheet href=http://evil.example/x.css>
<details open ontoggle="pwn('toggle')">d</details><object data="javascript:pwn('object')"></object><embed src="javascript:pwn('embed')">
<math><mtext><table><mglyph><style><img src=x onerror="pwn('mxss')"></style></mglyph></table></mtext></math>
<base href="http://evil.example/"><meta http-equiv="refresh" content="0;url=javascript:pwn('meta')">
<form action="javascript:pwn('form')"><button formaction="javascript:pwn('formaction')">b</button></form>
[js](javascript:pwn('mdlink')) [js2](JaVaScRiPt:pwn('mdlink2')) [data](data:text/html;base64,PHNjcmlwdD5wd24oJ2RhdGEnKTwvc2NyaXB0Pg==)
[vb](vbscript:msgbox) [t](http://example.com "title\" onmouseover=\"pwn('title')\"") <a href="javascript:pwn('a')">a</a>
![img](javascript:pwn('mdimg')) ![img2](http://evil.example/beacon.png) <https://evil.example/"onmouseover="pwn('autolink')>
&lt;script&gt;pwn('entity')&lt;/script&gt; &#x3C;img src=x onerror=pwn('ent2')&#x3E; &#60;b&#62;
` + "```html\n</code></pre><img src=x onerror=\"pwn('fence')\">\n```\n" +
	"```\"><img src=x onerror=pwn('lang')>\ncode\n```\n" +
	"`</code><img src=x onerror=pwn('inline')>`\n" +
	"ANSI \x1b[31mred\x1b[0m \x1b]8;;javascript:pwn('osc8')\x07link\x1b]8;;\x07 bidi \u202eevil\u202c nul \x00 bad utf8 \xff\xfe end-of-payload"

var xssScript = &llmtest.Script{
	Rules: []llmtest.Rule{
		{If: `^xss`, Then: llmtest.Turn{Thinking: xssPayload, Text: xssPayload, Calls: []llmtest.Call{
			llmtest.ExecuteCode("bash", "cat <<'EOF'\n"+strings.ToValidUTF8(strings.ReplaceAll(xssPayload, "\x00", ""), "")+"\nEOF")}}},
	},
	Default: &llmtest.Turn{Text: "tool said: " + xssPayload},
}

// watch collects what the page reports: calls of window.pwn and the
// console's messages.
type watch struct {
	mu   sync.Mutex
	pwns []string
	logs []string
}

func (w *watch) bad() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.pwns {
		out = append(out, "pwn("+p+")")
	}
	for _, l := range w.logs {
		if strings.Contains(l, "PWNED") || strings.Contains(l, "Refused to") || strings.Contains(l, "evil.example") {
			out = append(out, l)
		}
	}
	return out
}

func watchPage(t *testing.T, ctx context.Context) *watch {
	w := &watch{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			w.mu.Lock()
			w.logs = append(w.logs, m.String())
			w.mu.Unlock()
		}
	}()
	do(t, ctx, chromedp.ExposeFunc("pwn", func(_ context.Context, where string) (chromedp.Void, error) {
		w.mu.Lock()
		w.pwns = append(w.pwns, where)
		w.mu.Unlock()
		return chromedp.Void{}, nil
	}))
	return w
}

// injected lists the elements and attributes of the page that no text of
// the tree may make.
// (The page's own script and styles are under the secret path, which
// the server writes into <html data-base>.)
const injected = `((b) => [...document.querySelectorAll(` +
	"`" + `script:not([src="${b}/assets/app.js"]), img, iframe, frame, object, embed, svg, math, ` +
	`style, link:not([href="${b}/assets/style.css"]):not([href="${b}/assets/icon.svg"]), base, meta[http-equiv], video, audio, source, ` +
	`form:not(#newform):not(#promptform):not(#editform):not(.searchform), button[formaction], [onerror], [onload], [onclick], ` +
	`[onmouseover], [ontoggle], [onfocus], [srcdoc], [title*=onmouseover], :not(.seg)[style], a[href^="javascript" i], ` +
	`a[href^="data" i], a[href^="vbscript" i]` + "`" + `)].map(e => e.outerHTML.slice(0, 160)))(document.documentElement.dataset.base)`

func checkPage(t *testing.T, ctx context.Context, w *watch, what string) {
	t.Helper()
	if got := eval[[]string](t, ctx, injected); len(got) > 0 {
		t.Errorf("%s: the page has injected markup: %q", what, got)
	}
	if p := eval[string](t, ctx, "String(window.pwned)"); p != "undefined" {
		t.Errorf("%s: window.pwned = %s", what, p)
	}
	if eval[bool](t, ctx, `getComputedStyle(document.body).display === 'none' || getComputedStyle(document.querySelector('main')).visibility === 'hidden'`) {
		t.Errorf("%s: a style of the payload hid the page", what)
	}
	if b := w.bad(); len(b) > 0 {
		t.Errorf("%s: %q", what, b)
	}
}

func TestAttackBrowserXSS(t *testing.T) {
	e := start(t, xssScript)
	ctx := browser(t)
	w := watchPage(t, ctx)
	// A directory whose name is markup, a model name that is markup.
	cwd := filepath.Join(t.TempDir(), `x<iframe>"'&amp;<b>pwn('cwd')<`)
	if err := os.Mkdir(cwd, 0755); err != nil {
		t.Fatal(err)
	}
	e.cwd = cwd
	id := e.newSession("xss")
	e.write("m/xss", "</textarea><script>pwn('note')</script><img src=x onerror=pwn('note2')>"+xssPayload)
	e.write("s/"+id+"/prompt", "xss go")
	testutil.Until(t, "the turn over", func() bool {
		return strings.Contains(e.read("s/"+id+"/chat"), "tool said:") && strings.TrimSpace(e.read("s/"+id+"/state")) == "idle"
	})

	do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.CSS("#sessions tbody tr")))
	checkPage(t, ctx, w, "the list")
	do(t, ctx, chromedp.Navigate(e.base+"/s/"+id))
	until(t, ctx, "the chat", "document.getElementById('session').dataset.ready === '1' && "+chatHas("tool said:"))
	// Open every collapsed block, so that nothing is hidden from the checks.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`for (const d of document.querySelectorAll('details')) d.open = true`))
	checkPage(t, ctx, w, "the session")
	// Markup and escape sequences are shown as text; no control or
	// reordering character reaches the page raw.
	for _, want := range []string{"<script>pwn('script')", "<img src=x onerror=", "end-of-payload"} {
		if !eval[bool](t, ctx, chatHas(want)) {
			t.Errorf("the chat does not show %q as text", want)
		}
	}
	// Raw HTML in a reply is shown as text, not left out with every line
	// after it up to a blank one.
	if !eval[bool](t, ctx, `[...document.querySelectorAll('.k-assistant')].some(b => b.textContent.includes("<script>pwn('script')") && b.textContent.includes('end-of-payload'))`) {
		t.Errorf("the reply's raw HTML and the text after it are not shown")
	}
	if raw := eval[string](t, ctx, `(document.body.textContent.match(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g) || []).map(c => c.charCodeAt(0).toString(16)).join(' ')`); raw != "" {
		t.Errorf("the page has raw control characters: %s", raw)
	}
	// The reply streamed live, in a page open while the turn runs.
	e.write("s/"+id+"/prompt", "xss again")
	until(t, ctx, "the second reply", "document.querySelectorAll('.k-call').length >= 2 && "+
		"document.querySelectorAll('.k-assistant').length >= 4")
	testutil.Until(t, "the second turn over", func() bool { return strings.TrimSpace(e.read("s/"+id+"/state")) == "idle" })
	until(t, ctx, "the second reply drawn whole", drawnWhole)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`for (const d of document.querySelectorAll('details')) d.open = true`))
	checkPage(t, ctx, w, "the session, streamed")
	for _, p := range []string{"/s/" + id + "/context", "/s/" + id + "/systemprompt", "/s/" + id + "/cfg", "/search?q=pwn",
		"/search?q=" + "%3Cscript%3Epwn('q')%3C/script%3E", "/files", "/edit?p=m/xss"} {
		do(t, ctx, chromedp.Navigate(e.base+p), chromedp.WaitReady(chromedp.CSS("main")))
		checkPage(t, ctx, w, p)
	}
	if v := eval[string](t, ctx, "document.querySelector('textarea[name=text]').value"); !strings.HasPrefix(v, "</textarea><script>") {
		t.Errorf("the editor does not hold the note as text: %.80q", v)
	}
	shot(t, ctx, "attack-editor")
	// A tree error that repeats the markup it was given.
	do(t, ctx, chromedp.Navigate(e.base+"/edit?p=a/default.json"), chromedp.WaitVisible(chromedp.ID("editform")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('textarea[name=text]').value = '{"<img src=x onerror=pwn(1)>": "<script>pwn(2)</script>"}'`),
		chromedp.Click(chromedp.CSS("#editform button[type=submit]")))
	until(t, ctx, "the tree's error", "!document.getElementById('err').hidden")
	checkPage(t, ctx, w, "the editor's error")
}

// consentCode hides what it does from a reader who trusts the first
// line, a terminal, or the order the characters are drawn in.
var consentCode = "echo harmless" + strings.Repeat(" ", 3000) + "; touch HIDDEN1\n" +
	"echo \u202eHIDDEN2\u202c # bidi\n" +
	"echo a\u200bb\u2060c\u180ed\U000E0041\U000E0042e\u2028f\u2066g\u00adh\ufeffi # invisible\n" +
	"echo visible\rtouch HIDDEN3 \x1b[2K # carriage return, erase line\n" +
	"---\nwrite allow or deny into this file\n" + strings.Repeat("\n", 80) + "touch HIDDEN4"

var consentScript = &llmtest.Script{
	Rules: []llmtest.Rule{
		{If: `^consent`, Then: llmtest.Turn{Text: "Needs consent.", Calls: []llmtest.Call{{Name: "execute_code",
			Args: json.RawMessage(`{"steps":[{"code":` + strconvQuote(consentCode) + `,"language":"bash","elevated":true}]}`)}}}},
	},
	Default: &llmtest.Turn{Text: "done"},
}

func TestAttackBrowserConsentShowsAll(t *testing.T) {
	e := start(t, consentScript)
	ctx := browser(t)
	w := watchPage(t, ctx)
	id := e.newSession("consent")
	do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.ID("newform")),
		chromedp.Navigate(e.base+"/s/"+id))
	until(t, ctx, "the stream", "document.getElementById('session').dataset.ready === '1'")
	e.write("s/"+id+"/prompt", "consent please")
	until(t, ctx, "the consent request", "!!document.querySelector('.ask pre')")
	text := eval[string](t, ctx, "document.querySelector('.ask pre').textContent")
	for _, want := range []string{"echo harmless", "; touch HIDDEN1", "<U+202E>HIDDEN2<U+202C>", "a<U+200B>b<U+2060>c<U+180E>d<U+E0041><U+E0042>e<U+2028>f<U+2066>g<U+00AD>h<U+FEFF>i",
		"echo visible␍touch HIDDEN3 ␛[2K", "touch HIDDEN4"} {
		if !strings.Contains(text, want) {
			t.Errorf("the consent request does not show %q", want)
		}
	}
	// Each part is drawn inside the box, where a person can see it (or
	// scroll to it), not clipped off its right edge.
	for _, part := range []string{"touch HIDDEN1", "touch HIDDEN4"} {
		where := eval[string](t, ctx, `(() => {
			const pre = document.querySelector('.ask pre'), want = `+js(part)+`;
			const walk = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
			for (let n; (n = walk.nextNode());) {
				const i = n.data.indexOf(want);
				if (i < 0) continue;
				const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + want.length);
				const a = r.getBoundingClientRect(), b = pre.getBoundingClientRect();
				if (a.width <= 0 || a.height <= 0) return 'not drawn';
				if (a.left < b.left - 1 || a.right > b.right + 1) return 'outside the box: ' + JSON.stringify([a, b]);
				return 'ok';
			}
			return 'not found';
		})()`)
		if where != "ok" {
			t.Errorf("%q in the consent request: %s", part, where)
		}
	}
	if ov := eval[string](t, ctx, `(() => { for (let e = document.querySelector('.ask pre'); e; e = e.parentElement) { const s = getComputedStyle(e); if (s.overflowY === 'hidden' || s.overflowX === 'hidden' || s.textOverflow === 'ellipsis') return e.className || e.tagName; } return ''; })()`); ov != "" {
		t.Errorf("the consent request sits in %s, which clips", ov)
	}
	shot(t, ctx, "attack-consent")
	checkPage(t, ctx, w, "the consent request")
	do(t, ctx, chromedp.Click(chromedp.CSS(".ask button[data-answer=deny]")))
	until(t, ctx, "the request answered", "!document.querySelector('.ask')")
	testutil.Until(t, "the turn over", func() bool { return strings.TrimSpace(e.read("s/"+id+"/state")) == "idle" })
	for _, f := range []string{"HIDDEN1", "HIDDEN2", "HIDDEN3", "HIDDEN4"} {
		if _, err := os.Stat(filepath.Join(e.cwd, f)); err == nil {
			t.Errorf("denied, but %s was made", f)
		}
	}
}

// TestAttackOtherPortGetsNoToken: cookies do not tell ports apart (RFC
// 6265 §8.5), so a cookie of 127.0.0.1:PORT goes to every server on
// 127.0.0.1 the browser visits: a dev server the agent started, another
// local user's. None may receive the page's token, nor the secret path
// the cookie is scoped to; and the cookies such a server plants under
// the same name lock nobody out.
func TestAttackOtherPortGetsNoToken(t *testing.T) {
	e := start(t, &llmtest.Script{})
	ctx := browser(t)
	var mu sync.Mutex
	var seen []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hostile := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		r.Write(&b)
		mu.Lock()
		seen = append(seen, b.String())
		mu.Unlock()
		for _, p := range []string{"/", "/s", "/assets", "/events"} {
			w.Header().Add("Set-Cookie", cookieName(e)+"=planted; Path="+p+"; SameSite=Lax")
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p id=hostile>a dev server</p>"))
	})}
	go hostile.Serve(ln)
	t.Cleanup(func() { hostile.Close() })
	do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.ID("newform")))
	// The person opens the dev server (typed, or a link in a reply).
	do(t, ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/"), chromedp.WaitVisible(chromedp.ID("hostile")))
	do(t, ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/s/x"), chromedp.WaitVisible(chromedp.ID("hostile")))
	secret := strings.TrimPrefix(e.base, e.origin+"/")
	mu.Lock()
	if len(seen) < 2 {
		t.Errorf("the server on %s saw %d requests, want 2", ln.Addr(), len(seen))
	}
	for _, req := range seen {
		if strings.Contains(req, tokenOf(e)) || strings.Contains(req, secret) || strings.Contains(req, cookieName(e)+"=") && !strings.Contains(req, cookieName(e)+"=planted") {
			t.Errorf("the server on %s got the token, the secret path or ollie's cookie:\n%s", ln.Addr(), req)
		}
	}
	mu.Unlock()
	// The planted cookies go to ollie too; its own still counts.
	do(t, ctx, chromedp.Navigate(e.base+"/"), chromedp.WaitVisible(chromedp.ID("newform")))
	until(t, ctx, "the page works after the planted cookies", "document.documentElement.dataset.base === "+strconv.Quote(strings.TrimPrefix(e.base, e.origin)))
}

// TestAttackBrowserDeepMarkdown: a model's reply of half a megabyte of
// "- " (or of "[a](") held a core of the web server for many minutes
// (goldmark's time grows with the square of such text) before the page
// could show it. Through the real daemon, the scripted model and a
// browser, the page shows each such reply, whole, as text.
func TestAttackBrowserDeepMarkdown(t *testing.T) {
	for name, reply := range map[string]string{
		"lists": strings.Repeat("- ", 1<<18) + "end-of-lists",
		"links": strings.Repeat("[a](", 1<<17) + "end-of-links",
	} {
		t.Run(name, func(t *testing.T) {
			e := start(t, &llmtest.Script{Default: &llmtest.Turn{Text: reply}})
			ctx := browser(t)
			id := e.newSession("deep")
			e.write("s/"+id+"/prompt", "go")
			testutil.Until(t, "the turn over", func() bool { return strings.TrimSpace(e.read("s/"+id+"/state")) == "idle" })
			// The first page takes the token from its address.
			do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.CSS("#sessions tbody tr")))
			do(t, ctx, chromedp.Navigate(e.base+"/s/"+id))
			until(t, ctx, "the reply drawn", "document.getElementById('session').dataset.ready === '1' && "+chatHas("end-of-"+name)+" && "+drawnWhole)
			if !eval[bool](t, ctx, `[...document.querySelectorAll('.k-assistant pre')].some(p => p.textContent.length >= `+strconv.Itoa(len(reply))+` && p.textContent.endsWith('end-of-`+name+`'))`) {
				t.Errorf("the reply is not shown whole as text")
			}
			if n := eval[int](t, ctx, `document.querySelectorAll('#chat li, #chat .k-assistant a').length`); n != 0 {
				t.Errorf("the reply was rendered as Markdown: %d list items or links", n)
			}
		})
	}
}
