package defaults_test

import (
	"bufio"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	"ollie.dev/ollie/defaults"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/index"
)

// maxSkillLines keeps skills short: the model loads them on demand.
const maxSkillLines = 45

// Every shipped tool has the header t/idx is made from and a skill
// (sk/ + its name up to the first _), and every execute_code example in
// the skills and the base prompt is a valid call of tools that exist.
func TestShippedToolsAndSkills(t *testing.T) {
	d := defaults.FS()
	tools, _ := fs.Glob(d, "t/*")
	if len(tools) < 13 {
		t.Fatalf("only %d tools shipped: %v", len(tools), tools)
	}
	exists := map[string]bool{}
	for _, p := range tools {
		exists[path.Base(p)] = true
	}
	for _, p := range tools {
		name := path.Base(p)
		b, _ := fs.ReadFile(d, p)
		if !strings.HasPrefix(string(b), "#!/") {
			t.Errorf("%s has no #! line", p)
		}
		desc, args := header(string(b))
		if desc == "" || strings.HasSuffix(desc, ".") || len(desc) > 120 {
			t.Errorf("%s: description %q: want one line of at most 120 characters, no final period", p, desc)
		}
		if !args {
			t.Errorf("%s has no args: header", p)
		}
		skill := "sk/" + strings.SplitN(name, "_", 2)[0] + ".md"
		sb, err := fs.ReadFile(d, skill)
		if err != nil {
			t.Errorf("tool %s has no skill %s", name, skill)
			continue
		}
		if !strings.Contains(string(sb), name) {
			t.Errorf("skill %s does not mention %s", skill, name)
		}
	}
	skills, _ := fs.Glob(d, "sk/*.md")
	for _, p := range append(skills, "p/base.md") {
		b, _ := fs.ReadFile(d, p)
		text := string(b)
		if strings.HasPrefix(p, "sk/") {
			fm, err := index.FrontMatter(b)
			if err != nil || fm["name"] != strings.TrimSuffix(path.Base(p), ".md") || fm["description"] == "" {
				t.Errorf("%s: front matter %v, %v", p, fm, err)
			}
			if n := strings.Count(text, "\n"); n > maxSkillLines {
				t.Errorf("%s has %d lines; keep skills under %d", p, n, maxSkillLines)
			}
		}
		exs := examples(text)
		if len(exs) == 0 && p != "sk/tree.md" {
			t.Errorf("%s has no execute_code example", p)
		}
		for _, ex := range exs {
			a, err := execute.ParseArgs([]byte(ex), config.DefaultSandbox())
			if err != nil {
				t.Errorf("%s: example %s: %v", p, ex, err)
				continue
			}
			for _, st := range a.Steps {
				if st.Tool != "" && !exists[st.Tool] {
					t.Errorf("%s: example %s calls no such tool %s", p, ex, st.Tool)
				}
			}
		}
	}
	base, _ := fs.ReadFile(d, "p/base.md")
	for _, v := range []string{"{{toolnames}}", "t/idx", "$OLLIE/sk/"} {
		if !strings.Contains(string(base), v) {
			t.Errorf("p/base.md lacks %s", v)
		}
	}
}

// header reads a script's description and whether it has an args line,
// as internal/index does.
func header(script string) (desc string, args bool) {
	sc := bufio.NewScanner(strings.NewReader(script))
	for i := 0; i < 30 && sc.Scan(); i++ {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "#"))
		if v, ok := strings.CutPrefix(line, "description:"); ok {
			desc = strings.TrimSpace(v)
		}
		if strings.HasPrefix(line, "args:") {
			args = true
		}
	}
	return desc, args
}

var exampleRE = regexp.MustCompile(`\{"steps":.*\}`)

// examples finds the execute_code arguments written out in a text: a
// {"steps": ...} object on one line, in a code block or in backquotes.
func examples(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, m := range exampleRE.FindAllString(line, -1) {
			if i := strings.Index(m, "}`"); i >= 0 {
				m = m[:i+1] // the end of a backquoted example
			}
			out = append(out, m)
		}
	}
	return out
}
