package web

import (
	"html"
	"strings"
	"sync"
)

// highlight marks up code for the page's colours: comments, strings,
// numbers and the keywords of common languages. It is a lexer of a few
// rules, not a parser; a language it does not know gets strings and
// comments only. Its output is escaped text in <span class="hl-…">.
func highlight(lang, code string) string {
	kw := keywords()[strings.ToLower(lang)]
	hash := hashComment[strings.ToLower(lang)]
	var b strings.Builder
	emit := func(class, s string) {
		if class == "" {
			b.WriteString(html.EscapeString(s))
			return
		}
		b.WriteString(`<span class="hl-` + class + `">` + html.EscapeString(s) + `</span>`)
	}
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case hash && c == '#', c == '/' && i+1 < len(code) && code[i+1] == '/' && !hash:
			j := strings.IndexByte(code[i:], '\n')
			if j < 0 {
				j = len(code) - i
			}
			emit("c", code[i:i+j])
			i += j
		case c == '/' && i+1 < len(code) && code[i+1] == '*' && !hash:
			j := strings.Index(code[i+2:], "*/")
			end := len(code)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			emit("c", code[i:end])
			i = end
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(code) && code[j] != c && (c == '`' || code[j] != '\n') {
				if code[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			j = min(j+1, len(code))
			emit("s", code[i:j])
			i = j
		case isDigit(c) && (i == 0 || !isWord(code[i-1])):
			j := i
			for j < len(code) && (isWord(code[j]) || code[j] == '.') {
				j++
			}
			emit("n", code[i:j])
			i = j
		case isWord(c):
			j := i
			for j < len(code) && isWord(code[j]) {
				j++
			}
			if kw[code[i:j]] {
				emit("k", code[i:j])
			} else {
				emit("", code[i:j])
			}
			i = j
		default:
			j := i + 1
			for j < len(code) && !isWord(code[j]) && !strings.ContainsRune("\"'`/#", rune(code[j])) {
				j++
			}
			emit("", code[i:j])
			i = j
		}
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWord(c byte) bool {
	return c == '_' || isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var hashComment = map[string]bool{"bash": true, "sh": true, "shell": true, "zsh": true, "python": true, "python3": true,
	"py": true, "perl": true, "ruby": true, "yaml": true, "toml": true, "awk": true, "make": true, "r": true}

var keywords = sync.OnceValue(func() map[string]map[string]bool {
	sh := words("if then else elif fi for while until do done case esac in function return local export set exit break continue echo cd")
	py := words("def class return if elif else for while in not and or is None True False import from as with try except finally raise yield lambda pass break continue async await global")
	goKw := words("func package import var const type struct interface map chan go defer return if else for range switch case default select break continue fallthrough nil true false")
	js := words("function var let const return if else for while do switch case default break continue new this class extends import export from async await try catch finally throw typeof null undefined true false")
	c := words("int char long short unsigned signed void struct union enum typedef static const return if else for while do switch case default break continue sizeof include define")
	rust := words("fn let mut pub struct enum impl trait use mod match if else for while loop return self Self crate true false as where")
	return map[string]map[string]bool{
		"bash": sh, "sh": sh, "shell": sh, "zsh": sh, "python": py, "python3": py, "py": py, "go": goKw,
		"js": js, "javascript": js, "ts": js, "typescript": js, "c": c, "cpp": c, "c++": c, "rust": rust, "rs": rust,
	}
})
