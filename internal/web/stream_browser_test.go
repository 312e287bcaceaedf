package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/testutil"
)

// gatedRunner stands in for the agent loop: it writes a reply one part
// at a time, each when the test sends it, and ends the turn when the
// channel is closed; so the test knows the turn is still running while
// it looks at the page.
type gatedRunner struct{ parts chan string }

func (g gatedRunner) Run(ctx context.Context, t *session.Turn) error {
	t.Chat("assistant: ")
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case p, ok := <-g.parts:
			if !ok {
				t.Chat("\n")
				return t.SetReply("ok\n")
			}
			t.Chat(p)
		}
	}
}

func (gatedRunner) Compact(ctx context.Context, t *session.Turn) error { return nil }

// dangerous is a condition: the chat holds an element a reply must never make.
const dangerous = `!!document.querySelector('#chat script, #chat img, #chat iframe, #chat [onerror], #chat a[href^="javascript"]')`

// TestBrowserStreamsTails: a reply shows in the page part by part while
// its turn runs (each part drawn before the next is written), as text
// that makes no element; once the turn is over it is drawn whole, as
// rendered and sanitized Markdown.
func TestBrowserStreamsTails(t *testing.T) {
	g := gatedRunner{parts: make(chan string)}
	e := startWith(t, pageScript, g)
	ctx := browser(t)
	id := e.newSession("tails")
	do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.ID("newform")))
	do(t, ctx, chromedp.Navigate(e.base+"/s/"+id), chromedp.WaitVisible(chromedp.CSS("#session[data-ready='1']")))
	// Whatever the page draws meanwhile, no element of the reply's markup
	// may ever be in it.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.bad = 0; window.lives = 0;
new MutationObserver(() => { if (`+dangerous+`) window.bad++; if (document.querySelector('#chat .live')) window.lives++; })
  .observe(document.getElementById('chat'), {subtree: true, childList: true, characterData: true});`))
	e.write("s/"+id+"/prompt", "go")
	parts := []string{
		"Partial **bold** <img src=x onerror=\"window.pwned=1\"> ",
		"then <script>window.pwned=2</script> [a link](javascript:window.pwned=3) ",
		"and \x1b[31mred\x1b[0m\nsecond line ",
	}
	for i := 0; i < 3; i++ {
		parts = append(parts, fmt.Sprintf("chunk-%d ", i))
	}
	for i, p := range parts {
		g.parts <- p
		want, _, _ := strings.Cut(p, " ") // a word drawn the same as text and as Markdown
		until(t, ctx, fmt.Sprintf("part %d in the page", i), chatHas(want))
		if st := strings.TrimSpace(e.read("s/" + id + "/state")); st != "running" {
			t.Fatalf("state %q while the reply streams", st)
		}
		if eval[bool](t, ctx, dangerous) {
			t.Errorf("after part %d the chat holds markup of the reply as elements", i)
		}
	}
	close(g.parts)
	until(t, ctx, "the reply drawn whole", drawnWhole)
	if got := eval[string](t, ctx, "document.querySelector('.k-assistant strong').textContent"); got != "bold" {
		t.Errorf("the finished reply's Markdown is not rendered: <strong> = %q", got)
	}
	for _, want := range []string{"<img src=x", "<script>window.pwned=2</script>", "␛[31mred␛[0m", "chunk-2"} {
		if !eval[bool](t, ctx, chatHas(want)) {
			t.Errorf("the finished reply does not show %q as text", want)
		}
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`for (const a of document.querySelectorAll('#chat a')) a.click()`))
	if p := eval[string](t, ctx, "String(window.pwned)"); p != "undefined" {
		t.Errorf("a script of the reply ran: window.pwned = %s", p)
	}
	if n := eval[int](t, ctx, "window.bad"); n != 0 || eval[bool](t, ctx, dangerous) {
		t.Errorf("the chat held markup of the reply as elements (%d times)", n)
	}
	t.Logf("the chat had a streamed tail in %d of its changes", eval[int](t, ctx, "window.lives"))
}

// TestBrowserLazyList: the list's HTML holds a screenful of sessions,
// the page fills in the rest after it has loaded (the oldest session
// too), and every row stays live, those drawn late as well.
func TestBrowserLazyList(t *testing.T) {
	e := start(t, pageScript)
	ctx := browser(t)
	const n = 130
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, e.newSession(fmt.Sprintf("lazy%03d", i)))
	}
	oldest := ids[0]
	c := e.client()
	var body string
	testutil.Until(t, "the server's list of all", func() bool {
		req, _ := http.NewRequest("GET", e.base+"/", nil)
		_, body, _ = get(t, c, req)
		return strings.Contains(body, fmt.Sprintf(`data-total="%d"`, n))
	})
	if strings.Count(body, "<tr data-id=") >= n || strings.Contains(body, oldest) {
		t.Errorf("the list's HTML holds every session: %d rows", strings.Count(body, "<tr data-id="))
	}
	if !strings.Contains(body, ids[n-1]) {
		t.Errorf("the list's HTML does not hold the newest session first")
	}
	do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.CSS("#sessions tbody tr")))
	until(t, ctx, "every session in the list", fmt.Sprintf("document.querySelectorAll('#sessions tbody tr').length === %d", n))
	row := `document.querySelector('#sessions tr[data-id=` + js(oldest) + `]')`
	until(t, ctx, "the oldest session, last", "document.querySelector('#sessions tbody tr:last-child').dataset.id === "+js(oldest))
	if c := eval[string](t, ctx, "document.getElementById('count').textContent"); c != fmt.Sprint(n) {
		t.Errorf("count %q, want %d", c, n)
	}
	e.write("s/"+oldest+"/prompt", "slow again")
	until(t, ctx, "its state in the list", row+`.querySelector('.state').textContent === 'calling execute_code'`)
	e.write("s/"+oldest+"/ctl", "stop")
	until(t, ctx, "idle again in the list", row+`.querySelector('.state').textContent === 'idle'`)
	// A session made now comes first; one removed leaves.
	made := e.newSession("lazynew")
	until(t, ctx, "the new session first", "document.querySelector('#sessions tbody tr').dataset.id === "+js(made))
	if err := e.fsys.Remove(context.Background(), "s/"+ids[1]); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the removed session gone", `!document.querySelector('#sessions tr[data-id=`+js(ids[1])+`]')`)
	until(t, ctx, "the count", "document.getElementById('count').textContent === "+js(fmt.Sprint(n)))
}
