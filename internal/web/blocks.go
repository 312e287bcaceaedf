package web

import (
	"encoding/json"
	"strings"
)

// blockHTML draws one block of a chat. Every piece of text in it is
// model, tool or user data: Markdown goes through markdown(), the rest
// through escape().
func blockHTML(b block) string {
	switch b.Kind {
	case "user":
		return `<div class="who">you</div><div class="text plain">` + escape(b.Text) + `</div>`
	case "assistant":
		return `<div class="text md">` + markdown(b.Text) + `</div>`
	case "think":
		return `<details class="think"><summary>reasoning</summary><div class="md">` + markdown(b.Text) + `</div></details>`
	case "call":
		return callHTML(b)
	case "error":
		return `<div class="text plain">error: ` + escape(b.Text) + `</div>`
	default:
		return `<div class="text plain">` + escape(b.Text) + `</div>`
	}
}

// A stage of execute_code's argument, as far as the page shows it.
type stage struct {
	Code     string          `json:"code"`
	Language string          `json:"language"`
	Tool     string          `json:"tool"`
	Args     []string        `json:"args"`
	Parallel []stage         `json:"parallel"`
	Elevated bool            `json:"elevated"`
	Timeout  json.RawMessage `json:"timeout"`
}

// callHTML draws a tool call: its stages in order, the branches of a
// parallel stage side by side, then its output. The summary line gets
// the exit status and the duration from the events (the page fills in
// the span.meta of data-call N from the N-th tool_end).
func callHTML(b block) string {
	name, args, _ := strings.Cut(b.Text, "(")
	args = strings.TrimSuffix(args, ")")
	var w strings.Builder
	w.WriteString(`<details class="call" data-call="` + itoa(b.Call) + `"><summary><span class="tool">` + escape(name) + `</span>`)
	var spec struct {
		Steps   []stage         `json:"steps"`
		Timeout json.RawMessage `json:"timeout"`
	}
	parsed := json.Unmarshal([]byte(args), &spec) == nil && len(spec.Steps) > 0
	if parsed {
		w.WriteString(` <span class="dim">` + itoa(len(spec.Steps)) + plural(len(spec.Steps), " stage", " stages") + `</span>`)
	}
	w.WriteString(`<span class="meta"></span></summary>`)
	if parsed {
		w.WriteString(`<div class="stages">`)
		for i, st := range spec.Steps {
			stageHTML(&w, st, i+1)
		}
		w.WriteString(`</div>`)
	} else {
		w.WriteString(`<pre class="args">` + escape(args) + `</pre>`)
	}
	if b.Out != "" {
		w.WriteString(`<div class="label">output</div><pre class="out">` + escape(strings.TrimSuffix(b.Out, "\n")) + `</pre>`)
	}
	w.WriteString(`</details>`)
	return w.String()
}

func stageHTML(w *strings.Builder, st stage, n int) {
	switch {
	case len(st.Parallel) > 0:
		w.WriteString(`<div class="stage par"><div class="label">` + itoa(n) + ` · parallel, ` + itoa(len(st.Parallel)) + ` branches</div><div class="branches">`)
		for i, br := range st.Parallel {
			w.WriteString(`<div class="branch">`)
			stageHTML(w, br, i+1)
			w.WriteString(`</div>`)
		}
		w.WriteString(`</div></div>`)
	case st.Tool != "":
		w.WriteString(`<div class="stage"><div class="label">` + itoa(n) + ` · tool` + elevated(st) + `</div><pre><code>t/` + escape(st.Tool))
		for _, a := range st.Args {
			w.WriteString(" " + escape(shellQuote(a)))
		}
		w.WriteString(`</code></pre></div>`)
	default:
		lang := st.Language
		if lang == "" {
			lang = "bash"
		}
		w.WriteString(`<div class="stage"><div class="label">` + itoa(n) + ` · ` + escape(lang) + elevated(st) + `</div><pre><code>` + highlight(lang, visible(st.Code)) + `</code></pre></div>`)
	}
}

func elevated(st stage) string {
	if st.Elevated {
		return ` <span class="badge warn">elevated</span>`
	}
	return ""
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
