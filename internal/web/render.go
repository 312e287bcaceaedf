package web

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// Everything the model, a tool or a file wrote is data. Markdown is
// rendered here, on the server, with raw HTML left out, and what comes
// out goes through an allow-list sanitizer before it reaches the page;
// the page's Content-Security-Policy would stop a script that got
// through anyway. Text that is not Markdown is escaped.

// The renderer and the policy are built at the first use, not at
// package initialisation: this package is linked into the binary the
// daemon runs, which never renders a page (docs/bench.md, mem.idle).
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(codeRenderer{}, 100))),
	)
})

// policy allows the elements Markdown makes and nothing that fetches or
// runs: no images (the page loads nothing from anywhere but itself), no
// forms, no styles, links only to http, https and mailto.
var policy = sync.OnceValue(func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote",
		"ul", "ol", "li", "pre", "code", "em", "strong", "del", "table", "thead", "tbody", "tr", "th", "td", "span")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^(hl-[a-z]+|language-[A-Za-z0-9_+-]{1,30})$`)).OnElements("span", "code")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|right|center)$`)).OnElements("th", "td")
	p.AllowAttrs("start").Matching(regexp.MustCompile(`^[0-9]{1,6}$`)).OnElements("ol")
	return p
})

// markdown renders untrusted Markdown to safe HTML; text that would cost
// goldmark too much (unrenderable) is shown as it is.
func markdown(src string) string {
	v := visible(src)
	var buf bytes.Buffer
	if unrenderable(v) || md().Convert([]byte(v), &buf) != nil {
		return "<pre>" + html.EscapeString(v) + "</pre>"
	}
	return policy().Sanitize(buf.String())
}

// Two shapes of text cost goldmark time that grows faster than their
// size, so that a reply of a megabyte, which a model can write, would hold
// a core of the web server for minutes, for each page that shows it:
// containers (block quotes, list items) nested deep on one line (16,000
// "- " took 1.6 s), and brackets that open links never closed (16,000
// "[a](" took 1.6 s; 8,000 lines of "[" and then of "](" 0.46 s, and
// the time grows faster than the count). Text beyond these bounds, which
// prose does not reach, is shown as text; within them, a megabyte renders
// in about a second. Brackets are counted in code too: a block with more
// than maxBrackets of them in its code is shown as text, which is what
// code is.
const (
	maxNesting  = 32   // containers opened at the start of a line
	maxBrackets = 4096 // "[" in a block
)

// unrenderable reports whether src passes maxBrackets, or a line of it
// maxNesting.
func unrenderable(src string) bool {
	if strings.Count(src, "[") > maxBrackets {
		return true
	}
	for line := range strings.Lines(src) {
		if nesting(line) > maxNesting {
			return true
		}
	}
	return false
}

// nesting counts the container markers a line starts with ("> ", "- ",
// "* ", "+ ", "1. ", "1) "), each after up to four blanks, until the
// count passes maxNesting.
func nesting(line string) int {
	n, i := 0, 0
	for n <= maxNesting {
		j := i
		for j < len(line) && j-i < 4 && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		if j < len(line) && line[j] == '>' {
			n, i = n+1, j+1
			continue
		}
		k := j
		for k < len(line) && k-j < 9 && line[k] >= '0' && line[k] <= '9' {
			k++
		}
		switch {
		case k == j && k < len(line) && (line[k] == '-' || line[k] == '*' || line[k] == '+'):
		case k > j && k < len(line) && (line[k] == '.' || line[k] == ')'):
		default:
			return n
		}
		if k+1 >= len(line) || (line[k+1] != ' ' && line[k+1] != '\t') {
			return n
		}
		n, i = n+1, k+2
	}
	return n
}

// visible makes text harmless to show: invalid UTF-8 becomes U+FFFD,
// control characters (an escape sequence's ESC, a carriage return that
// would hide what came before it, a backspace) their visible symbols
// (␛ ␍ ␈), and the invisible characters that reorder or hide text
// (bidirectional overrides, zero-width ones) a visible <U+XXXX>.
func visible(s string) string {
	if !needsVisible(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('\u2421')
		case r >= 0x80 && r < 0xa0, hidden(r):
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsVisible(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c >= 0x80 {
			return !isPlainUTF8(s[i:])
		}
	}
	return false
}

// isPlainUTF8 reports whether s is valid UTF-8 with no control or hidden
// characters outside ASCII's printable ones, \n and \t.
func isPlainUTF8(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) || hidden(r) {
			return false
		}
	}
	return true
}

// hidden characters change how text around them is shown without being
// seen themselves: every format character (bidirectional controls,
// zero-width ones, the word joiner, the tag characters that spell ASCII
// no one sees), the line and paragraph separators, the combining
// grapheme joiner and the Hangul fillers, which draw as blanks.
func hidden(r rune) bool {
	switch r {
	case 0x034f, 0x115f, 0x1160, 0x3164, 0xffa0:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// escape is visible text as HTML.
func escape(s string) string { return html.EscapeString(visible(s)) }

// codeRenderer draws fenced and indented code blocks with highlight()
// instead of goldmark's plain escaping.
type codeRenderer struct{}

func (codeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, renderCode)
	reg.Register(ast.KindCodeBlock, renderCode)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindRawHTML, renderRawHTML)
}

// Raw HTML in a reply is shown as the text it is. Left out, as goldmark
// does by default, an HTML block swallows every line up to the next blank
// one, and the person never sees what the model wrote there.
func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if !entering {
		return ast.WalkContinue, nil
	}
	w.WriteString("<pre>")
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		w.WriteString(html.EscapeString(string(seg.Value(source))))
	}
	if n.HasClosure() {
		w.WriteString(html.EscapeString(string(n.ClosureLine.Value(source))))
	}
	w.WriteString("</pre>\n")
	return ast.WalkSkipChildren, nil
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := 0; i < n.Segments.Len(); i++ {
		seg := n.Segments.At(i)
		w.WriteString(html.EscapeString(string(seg.Value(source))))
	}
	return ast.WalkSkipChildren, nil
}

func renderCode(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	var lang string
	if f, ok := node.(*ast.FencedCodeBlock); ok {
		lang = string(f.Language(source))
	}
	var code strings.Builder
	lines := node.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		code.Write(seg.Value(source))
	}
	w.WriteString("<pre><code")
	if validLang().MatchString(lang) {
		w.WriteString(` class="language-` + lang + `"`)
	}
	w.WriteString(">")
	w.WriteString(highlight(lang, code.String()))
	w.WriteString("</code></pre>\n")
	return ast.WalkSkipChildren, nil
}

var validLang = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_+-]{1,30}$`) })
