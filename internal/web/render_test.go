package web

import (
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"
)

// attacks are replies a model (or a prompt injection through it) might
// write to run code in the page.
var attacks = []string{
	`<script>window.pwned=1</script>`,
	`<img src=x onerror="window.pwned=1">`,
	`[click](javascript:window.pwned=1)`,
	`<a href="javascript:window.pwned=1">x</a>`,
	`[x](JaVaScRiPt:alert(1))`,
	`[x](data:text/html,<script>alert(1)</script>)`,
	`<svg onload=alert(1)>`,
	`<iframe src="http://evil.example"></iframe>`,
	`![img](http://evil.example/track.png)`,
	`<style>body{display:none}</style>`,
	"```\n</code></pre><script>alert(1)</script>\n```",
	`<div style="background:url(http://evil.example)">x</div>`,
	`[x](vbscript:msgbox)`,
	`<form action="/api/put"><button>x</button></form>`,
	"\x1b]8;;javascript:alert(1)\x1b\\link\x1b]8;;\x1b\\",
}

func TestMarkdownRunsNothing(t *testing.T) {
	for _, h := range []string{`<img src=x>`, `<a href="javascript:x">`, `<b onclick=x>`, `<p style="x">`, `<script>`} {
		if unsafeMarkup(h) == "" {
			t.Fatalf("the check passes %q", h)
		}
	}
	for _, a := range attacks {
		for _, out := range []string{markdown(a), blockHTML(block{Kind: "assistant", Text: a}), blockHTML(block{Kind: "user", Text: a}),
			blockHTML(block{Kind: "think", Text: a}), blockHTML(block{Kind: "call", Text: `execute_code({"steps":[{"code":` + jsonString(a) + `}]})`, Out: a})} {
			if why := unsafeMarkup(out); why != "" {
				t.Errorf("%q renders as %q: %s", a, out, why)
			}
		}
	}
}

// unsafeMarkup says what in h could run, fetch or restyle: an element
// outside the few the page's blocks use, an event or style attribute, a
// link that is not http, https, mailto or relative.
func unsafeMarkup(h string) string {
	z := xhtml.NewTokenizer(strings.NewReader(h))
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			return ""
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			tok := z.Token()
			if !safeTags[tok.Data] {
				return "element " + tok.Data
			}
			for _, a := range tok.Attr {
				k, v := strings.ToLower(a.Key), strings.ToLower(strings.TrimSpace(a.Val))
				switch {
				case strings.HasPrefix(k, "on"), k == "style", k == "src", k == "srcset", k == "action", k == "formaction":
					return "attribute " + k
				case k == "href" && strings.Contains(v, ":") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "mailto:"):
					return "link " + v
				}
			}
		}
	}
}

var safeTags = map[string]bool{}

func init() {
	for _, t := range strings.Fields("p br hr h1 h2 h3 h4 h5 h6 blockquote ul ol li pre code em strong del table thead tbody tr th td span a div details summary") {
		safeTags[t] = true
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			b.WriteString(`\u00` + "0123456789abcdef"[r>>4:r>>4+1] + "0123456789abcdef"[r&15:r&15+1])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestMarkdownRenders(t *testing.T) {
	out := markdown("Hello **world**\n\n```go\nfunc f() { return \"s\" } // c\n```\n\n[ok](https://example.com)\n")
	for _, want := range []string{"<strong>world</strong>", `class="language-go"`, `<span class="hl-k">func</span>`,
		`<span class="hl-s">&#34;s&#34;</span>`, `<span class="hl-c">// c</span>`, `href="https://example.com"`, `rel="nofollow noreferrer noopener"`} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %s:\n%s", want, out)
		}
	}
}

func TestControlCharactersShown(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[31mred\x1b[0m": "␛[31mred␛[0m",
		"over\rwrite":        "over␍write",
		"bell\a":             "bell␇",
		"del\x7f":            "del␡",
		"bidi\u202eevil":     "bidi<U+202E>evil",
		"zero\u200bwidth":    "zero<U+200B>width",
		"c1\u009b31m":        "c1<U+009B>31m",
		"bad\xffutf8":        "bad\uFFFDutf8",
		"tab\tand\nnewline":  "tab\tand\nnewline",
		"plain ascii":        "plain ascii",
		"ünïcödé ok":         "ünïcödé ok",
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
	if got := escape("<b>\x1b"); got != "&lt;b&gt;␛" {
		t.Errorf("escape = %q", got)
	}
}

func TestChatBlocks(t *testing.T) {
	chat := "user: line one\nline two\n<think>\nI should list.\n</think>\nassistant: Let me look.\n" +
		`-> execute_code({"steps":[{"parallel":[{"code":"echo a","language":"bash"},{"code":"echo b","language":"bash"}]},{"code":"cat","language":"bash"}]})` +
		"\na\nb\nassistant: Done **now**\n:: compacted\nerror: stage 1 failed\n"
	var p chatParser
	view, _ := p.Write([]byte(chat))
	kinds := []string{}
	for _, b := range view {
		kinds = append(kinds, b.Kind)
	}
	if got := strings.Join(kinds, " "); got != "user think assistant call assistant info error" {
		t.Fatalf("kinds %q", got)
	}
	if view[0].Text != "line one\nline two" || view[1].Text != "I should list." || view[3].Out != "a\nb\n" {
		t.Errorf("blocks %+v", view)
	}
	h := blockHTML(view[3])
	for _, want := range []string{`data-call="0"`, `class="branches"`, "parallel, 2 branches", "<pre class=\"out\">a\nb</pre>"} {
		if !strings.Contains(h, want) {
			t.Errorf("call lacks %s: %s", want, h)
		}
	}
	// The same chat in pieces of every size gives the same blocks.
	for size := 1; size < 40; size++ {
		var q chatParser
		var v []block
		for i := 0; i < len(chat); i += size {
			v, _ = q.Write([]byte(chat[i:min(i+size, len(chat))]))
		}
		if len(v) != len(view) {
			t.Fatalf("pieces of %d: %d blocks", size, len(v))
		}
		for i := range v {
			if v[i] != view[i] {
				t.Fatalf("pieces of %d: block %d = %+v, want %+v", size, i, v[i], view[i])
			}
		}
	}
}

func TestStreamingReplyRedrawsOnlyTheLastBlock(t *testing.T) {
	var p chatParser
	p.Write([]byte("user: hi\n"))
	v, first := p.Write([]byte("assistant: Hel"))
	if len(v) != 2 || first > 1 || v[1].Text != "Hel" {
		t.Fatalf("view %+v first %d", v, first)
	}
	v, first = p.Write([]byte("lo"))
	if first > 1 || v[1].Text != "Hello" {
		t.Fatalf("view %+v first %d", v, first)
	}
	v, first = p.Write([]byte(" world\nuser: next\n"))
	if first > 1 || len(v) != 3 || v[1].Text != "Hello world" {
		t.Fatalf("view %+v first %d", v, first)
	}
}

// FuzzChat feeds the parser and the renderer arbitrary chats (what a
// model and its tools wrote), split at an arbitrary point: no panic, the
// split changes nothing, and nothing that could run comes out.
func FuzzChat(f *testing.F) {
	f.Add("user: hi\nassistant: <script>x</script>\n", 5)
	f.Add("-> execute_code({\"steps\":[{\"parallel\":[{\"code\":\"a\"}]}]})\nout\x1b[1m\n", 10)
	f.Add("<think>\n[x](javascript:1)\n</think>\n", 3)
	f.Fuzz(func(t *testing.T, chat string, cut int) {
		var whole, split chatParser
		v1, _ := whole.Write([]byte(chat))
		cut = max(0, min(cut, len(chat)))
		split.Write([]byte(chat[:cut]))
		v2, _ := split.Write([]byte(chat[cut:]))
		if len(v1) != len(v2) {
			t.Fatalf("split at %d: %d blocks, whole %d", cut, len(v2), len(v1))
		}
		for i := range v1 {
			if v1[i] != v2[i] {
				t.Fatalf("split at %d: block %d %+v, whole %+v", cut, i, v2[i], v1[i])
			}
			if h := blockHTML(v1[i]); unsafeMarkup(h) != "" {
				t.Fatalf("block %+v renders %q: %s", v1[i], h, unsafeMarkup(h))
			}
		}
	})
}

// TestDeepMarkdownShownAsText: a reply that nests lists or quotes deeper
// than maxNesting on one line, or has more than maxBrackets "[", is shown
// as its text, not given to goldmark,
// whose time grows with the square of those (a megabyte of "- " or of
// "[a](", which a model can write, would hold a core of the web server
// for many minutes, for each page showing it). Prose nested a few levels
// still renders.
func TestDeepMarkdownShownAsText(t *testing.T) {
	for _, src := range []string{
		strings.Repeat("- ", 1<<19) + "x",
		strings.Repeat(">", 1<<20) + " x",
		"ok\n\n" + strings.Repeat("1. ", 100) + "x\n",
		strings.Repeat("> - ", 40) + "x",
		strings.Repeat("-    ", 40) + "x",
		strings.Repeat("[a](", 1<<18),
		strings.Repeat("[\n", maxBrackets+1) + strings.Repeat("](\n", maxBrackets+1),
		"```\n" + strings.Repeat("[1],", maxBrackets+1) + "\n```\n",
	} {
		out := markdown(src)
		if !strings.HasPrefix(out, "<pre>") || strings.Contains(out, "<ul>") || strings.Contains(out, "<blockquote>") {
			t.Errorf("%.40q… (%d bytes) rendered as Markdown: %.80s", src, len(src), out)
		}
	}
	links := "text\n\n```json\n" + strings.Repeat("[1],", 1000) + "\n```\n\n" + strings.Repeat("see [a link](https://example.com)\n", 100)
	if out := markdown(links); strings.HasPrefix(out, "<pre>") || !strings.Contains(out, `href="https://example.com"`) {
		t.Errorf("a reply with some code and links:\n%.300s", out)
	}
	nested := "- a\n  - b\n    > c\n    > - d\n"
	if out := markdown(nested); strings.Count(out, "<ul>") != 3 || !strings.Contains(out, "<blockquote>") {
		t.Errorf("lists nested three deep:\n%s", out)
	}
	if n := nesting(strings.Repeat("- ", maxNesting) + "x"); n != maxNesting {
		t.Errorf("nesting of %d markers = %d", maxNesting, n)
	}
	if md := markdown(strings.Repeat("- ", maxNesting) + "x"); strings.HasPrefix(md, "<pre>") {
		t.Errorf("%d levels, the bound, shown as text", maxNesting)
	}
}
