package web_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"ollie.dev/ollie/internal/testutil"
)

// dialog clicks sel and answers the JavaScript dialog (prompt or
// confirm) the click opens, as a person would: accept or dismiss, with
// text typed into a prompt. It returns the dialog as it opened. The
// click itself waits for the dialog to close, so the answer is given
// from another goroutine.
func dialog(t *testing.T, ctx context.Context, sel string, accept bool, text string) page.EventJavascriptDialogOpening {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, testutil.HangTimeout)
	defer cancel()
	opened := make(chan page.EventJavascriptDialogOpening, 1)
	answered := make(chan error, 1)
	events := chromedp.Events(c, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range events {
			if err != nil {
				answered <- err
				return
			}
			opened <- ev
			answered <- chromedp.Do(c, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept, PromptText: text})
				return err
			}))
			return
		}
		answered <- errors.New("no dialog")
	}()
	clicked := make(chan error, 1)
	go func() { clicked <- chromedp.Do(c, chromedp.Click(chromedp.CSS(sel))) }()
	// The click may return before or after the dialog is answered; a
	// click that failed, or no dialog before the deadline, fails the test.
	var ev page.EventJavascriptDialogOpening
	for got := false; !got; {
		select {
		case ev = <-opened:
			got = true
		case err := <-answered:
			t.Fatalf("click %s: no dialog: %v", sel, err)
		case err := <-clicked:
			if err != nil {
				t.Fatalf("click %s: %v", sel, err)
			}
			clicked = nil
		}
	}
	if err := <-answered; err != nil {
		t.Fatalf("answer the dialog of %s: %v", sel, err)
	}
	if clicked != nil {
		if err := <-clicked; err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	return ev
}

// servedScript runs in every page before the page's own script: when
// the document is parsed, before app.js opens any stream, it keeps what
// the server's HTML shows (the list's rows, the session's name), so a
// test can tell what the server drew from what a stream added later.
const servedScript = `document.addEventListener('DOMContentLoaded', () => {
  window.served = Array.from(document.querySelectorAll('#sessions tbody tr'), (tr) => tr.dataset.id + ' ' + tr.querySelector('a').textContent);
  const n = document.getElementById('sname');
  window.servedName = n ? n.textContent : null;
});`

// untilLoaded waits for a condition in a page the browser is going to,
// perhaps still loading (an evaluation that fails there counts as false).
func untilLoaded(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	testutil.Until(t, what, func() bool {
		c, cancel := context.WithTimeout(ctx, testutil.HangTimeout)
		defer cancel()
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](expr))
		return err == nil && ok
	})
}

// cfgName is the session's name in its cfg file, read over 9P.
func (e *env) cfgName(id string) string {
	e.t.Helper()
	for _, l := range strings.Split(e.read("s/"+id+"/cfg"), "\n") {
		if v, ok := strings.CutPrefix(l, "name="); ok {
			return v
		}
	}
	return ""
}

// TestBrowserRenameEnd: Rename answers the page's prompt and renames the
// session in the tree (and in the page, and in the list); a name the
// tree refuses shows the tree's error and changes nothing; Cancel on the
// End confirmation keeps the session, OK ends it: gone from s/, its
// transcript in tr/, and from the list.
func TestBrowserRenameEnd(t *testing.T) {
	e := start(t, pageScript)
	ctx := browser(t)
	id := e.newSession("before")
	other := e.newSession("bystander")
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: servedScript})
		return err
	}))
	do(t, ctx, chromedp.Navigate(e.url), chromedp.WaitVisible(chromedp.ID("newform")))
	do(t, ctx, chromedp.Navigate(e.base+"/s/"+id), chromedp.WaitVisible(chromedp.CSS("#session[data-ready='1']")))
	sname := `document.getElementById('sname').textContent`

	t.Run("rename", func(t *testing.T) {
		ev := dialog(t, ctx, "button[data-op=rename]", true, "after-1")
		if ev.Type != page.DialogTypePrompt || ev.DefaultPrompt != "before" {
			t.Errorf("dialog %q with %q, want a prompt with the old name", ev.Type, ev.DefaultPrompt)
		}
		until(t, ctx, "the new name in the page", sname+` === 'after-1'`)
		if got := e.cfgName(id); got != "after-1" {
			t.Errorf("name in s/%s/cfg = %q after the rename", id, got)
		}
		// The new name names the session in the tree; the old one nothing.
		if got := strings.TrimSpace(e.read("s/after-1/cfg")); !strings.Contains(got, "name=after-1") {
			t.Errorf("s/after-1/cfg = %q", got)
		}
		if _, err := e.fsys.Stat(context.Background(), "s/before"); err == nil {
			t.Errorf("s/before still names a session")
		}
		if !eval[bool](t, ctx, `document.getElementById('err').hidden`) {
			t.Errorf("an error shown after a good rename: %q", eval[string](t, ctx, `document.getElementById('err').textContent`))
		}
		if title := eval[string](t, ctx, `document.title`); !strings.HasPrefix(title, "after-1 ") {
			t.Errorf("the page's title is %q after the rename", title)
		}
		shot(t, ctx, "renamed")
		// The rename was answered after the server's list had it: the
		// session's page and the list, loaded now, are drawn with the new
		// name (the list then stays so, live).
		do(t, ctx, chromedp.Navigate(e.base+"/s/"+id), chromedp.WaitVisible(chromedp.CSS("#session[data-ready='1']")))
		if got := eval[string](t, ctx, `window.servedName`); got != "after-1" {
			t.Errorf("the session's page, loaded again, is drawn with the name %q", got)
		}
		do(t, ctx, chromedp.Navigate(e.base+"/"), chromedp.WaitVisible(chromedp.CSS("#sessions tbody tr")))
		if got := eval[[]string](t, ctx, `window.served`); !slices.Contains(got, id+" after-1") {
			t.Errorf("the list is drawn with %q, want %q", got, id+" after-1")
		}
		until(t, ctx, "the new name in the live list", `document.querySelector('#sessions tr[data-id=`+js(id)+`] a').textContent === 'after-1'`)
		do(t, ctx, chromedp.Navigate(e.base+"/s/"+id), chromedp.WaitVisible(chromedp.CSS("#session[data-ready='1']")))
	})

	t.Run("bad names", func(t *testing.T) {
		for _, bad := range []string{"a/b", "two words", "bell\x07name", "new"} {
			idx := e.read("s/idx")
			// Take the last error off the page, so that the one checked is this name's.
			do(t, ctx, chromedp.Evaluate[chromedp.Void](`{const e = document.getElementById('err'); e.hidden = true; e.textContent = ''}`))
			dialog(t, ctx, "button[data-op=rename]", true, bad)
			until(t, ctx, "the tree's error for "+js(bad), `!document.getElementById('err').hidden`)
			msg := eval[string](t, ctx, `document.getElementById('err').textContent`)
			// The tree's own words: CheckName's error, the name quoted
			// (a control character shown as its symbol).
			if !strings.Contains(msg, "bad session name") {
				t.Errorf("rename to %q: error shown %q, want the tree's", bad, msg)
			}
			if strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' }) {
				t.Errorf("rename to %q: the error shows a raw control character: %q", bad, msg)
			}
			if got := e.cfgName(id); got != "after-1" {
				t.Errorf("rename to %q: the name in the tree became %q", bad, got)
			}
			if got := e.read("s/idx"); got != idx {
				t.Errorf("rename to %q changed s/idx:\n%s\nto\n%s", bad, idx, got)
			}
			if got := eval[string](t, ctx, sname); got != "after-1" {
				t.Errorf("rename to %q: the page shows the name %q", bad, got)
			}
			if bad == "a/b" {
				shot(t, ctx, "rename-refused")
			}
		}
	})

	t.Run("end", func(t *testing.T) {
		// Cancel: the page stays, the session too.
		ev := dialog(t, ctx, "button[data-op=end]", false, "")
		if ev.Type != page.DialogTypeConfirm {
			t.Errorf("End asks with a %q dialog, want a confirm", ev.Type)
		}
		// The click's handler has returned by the time this runs in the
		// page, and the page is still the session's.
		if p := eval[string](t, ctx, `location.pathname`); !strings.HasSuffix(p, "/s/"+id) {
			t.Errorf("after Cancel the page went to %s", p)
		}
		if !strings.Contains(e.read("s/idx"), id+"\t") {
			t.Fatalf("Cancel ended the session:\n%s", e.read("s/idx"))
		}
		if got := e.cfgName(id); got != "after-1" {
			t.Errorf("after Cancel the name is %q", got)
		}

		// OK: the session ends, its transcript is in tr/, and the page
		// goes to the list, which no longer has it.
		dialog(t, ctx, "button[data-op=end]", true, "")
		untilLoaded(t, ctx, "the list", `!!document.getElementById('sessions') && Array.isArray(window.served)`)
		// The list's HTML, drawn after End was answered, has no row of it.
		if got := eval[[]string](t, ctx, `window.served`); slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, id+" ") }) ||
			!slices.Contains(got, other+" bystander") {
			t.Errorf("after End the list is drawn with %q", got)
		}
		if strings.Contains(e.read("s/idx"), id) {
			t.Errorf("the ended session is still in s/idx:\n%s", e.read("s/idx"))
		}
		if _, err := e.fsys.Stat(context.Background(), "s/"+id); err == nil {
			t.Errorf("s/%s still there after End", id)
		}
		dir, err := e.fsys.ReadDir(context.Background(), "tr")
		if err != nil {
			t.Fatal(err)
		}
		var saved []string
		for _, d := range dir {
			if strings.HasPrefix(d.Name, id) {
				saved = append(saved, d.Name)
			}
		}
		if !strings.Contains(strings.Join(saved, " "), id+"-after-1.chat") {
			t.Errorf("no transcript of %s in tr/: %q", id, saved)
		}
		row := func(id string) string { return `document.querySelector('#sessions tr[data-id=` + js(id) + `]')` }
		until(t, ctx, "the list without the ended session, with the other", `!`+row(id)+` && !!`+row(other))
		if strings.Contains(eval[string](t, ctx, `document.getElementById('sessions').textContent`), "after-1") {
			t.Errorf("the list still names the ended session")
		}
		shot(t, ctx, "ended")
	})
}
