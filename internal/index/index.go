// Package index synthesizes t/idx and sk/idx: one line per tool from the
// header comments of the scripts in t/, one per skill from the front
// matter of the files in sk/. The tree serves them and the agent puts
// them in system prompts.
package index

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// ErrIncomplete marks front matter that more writes may still finish.
var ErrIncomplete = errors.New("incomplete")

// headerLines is how far into a script its header may reach.
const headerLines = 30

// Tools renders t/idx from the header comments of the scripts in t/:
//
//	# description: Read a file with numbered lines.
//	# args: PATH [FROM [TO]]
func Tools(root *os.Root) []byte {
	var b strings.Builder
	for _, name := range listFiles(root) {
		f, err := root.Open(name)
		if err != nil {
			continue
		}
		desc, args := scriptHeader(f)
		f.Close()
		if desc == "" {
			desc = "(no description header)"
		}
		fmt.Fprintf(&b, "%s: %s", name, desc)
		if args != "" {
			fmt.Fprintf(&b, "; args: %s", args)
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// scriptHeader finds "description:" and "args:" in the leading comments.
func scriptHeader(r io.Reader) (desc, args string) {
	sc := bufio.NewScanner(io.LimitReader(r, 8192))
	for i := 0; i < headerLines && sc.Scan(); i++ {
		line := strings.TrimSpace(sc.Text())
		for _, p := range []string{"#", "//", "--"} {
			line = strings.TrimPrefix(line, p)
		}
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok {
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "description":
				desc = strings.TrimSpace(v)
			case "args":
				args = strings.TrimSpace(v)
			}
		}
	}
	return desc, args
}

// Skills renders sk/idx from the front matter of each skill.
func Skills(root *os.Root) []byte {
	var b strings.Builder
	for _, name := range listFiles(root) {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		data, err := root.ReadFile(name)
		if err != nil {
			continue
		}
		fm, _ := FrontMatter(data)
		sname := fm["name"]
		if sname == "" {
			sname = strings.TrimSuffix(name, ".md")
		}
		desc := fm["description"]
		if desc == "" {
			desc = "(no description)"
		}
		fmt.Fprintf(&b, "%s: %s\n", sname, desc)
	}
	return []byte(b.String())
}

// ErrNoFrontMatter: a skill must start with front matter.
var ErrNoFrontMatter = errors.New(`a skill starts with front matter: a line "---", "name: ..." and "description: ..." lines, and a closing "---"`)

// FrontMatter parses the "---" delimited key: value header of a skill.
// An unclosed header made only of key: value lines is unfinished (more
// writes may close it); any other line before the closing "---" is wrong.
func FrontMatter(data []byte) (map[string]string, error) {
	if !bytes.HasPrefix(data, []byte("---\n")) {
		if bytes.HasPrefix([]byte("---\n"), data) {
			return nil, ErrIncomplete
		}
		return nil, ErrNoFrontMatter
	}
	fm := map[string]string{}
	lines := strings.Split(string(data[4:]), "\n")
	for i, line := range lines {
		if strings.TrimRight(line, " \t\r") == "---" {
			return fm, nil
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t") {
			if i == len(lines)-1 {
				return nil, ErrIncomplete // a line still being written
			}
			return nil, fmt.Errorf("front matter line %q is not key: value (or the closing --- is missing)", line)
		}
		fm[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return nil, ErrIncomplete
}

// listFiles returns the sorted names of the regular, non-hidden files at
// the top of root.
func listFiles(root *os.Root) []string {
	f, err := root.Open(".")
	if err != nil {
		return nil
	}
	defer f.Close()
	ents, _ := f.ReadDir(-1)
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") && !strings.HasSuffix(e.Name(), "~") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}
