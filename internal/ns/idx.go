package ns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// headerLines is how far into a script its header may reach.
const headerLines = 30

// toolIdx renders t/idx from the header comments of the scripts in t/:
//
//	# description: Read a file with numbered lines.
//	# args: PATH [FROM [TO]]
func toolIdx(root *os.Root) []byte {
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

// skillIdx renders sk/idx from the front matter of each skill.
func skillIdx(root *os.Root) []byte {
	var b strings.Builder
	for _, name := range listFiles(root) {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		data, err := root.ReadFile(name)
		if err != nil {
			continue
		}
		fm, _ := frontMatter(data)
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

var errNoFrontMatter = errors.New(`a skill starts with front matter: a line "---", "name: ..." and "description: ..." lines, and a closing "---"`)

// frontMatter parses the "---" delimited key: value header of a skill.
// An unclosed header made only of key: value lines is unfinished (more
// writes may close it); any other line before the closing "---" is wrong.
func frontMatter(data []byte) (map[string]string, error) {
	if !bytes.HasPrefix(data, []byte("---\n")) {
		if bytes.HasPrefix([]byte("---\n"), data) {
			return nil, tree.ErrIncomplete
		}
		return nil, errNoFrontMatter
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
				return nil, tree.ErrIncomplete // a line still being written
			}
			return nil, fmt.Errorf("front matter line %q is not key: value (or the closing --- is missing)", line)
		}
		fm[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return nil, tree.ErrIncomplete
}

func validSkill(name string, data []byte) error {
	fm, err := frontMatter(data)
	switch {
	case errors.Is(err, tree.ErrIncomplete):
		return err
	case err != nil:
		return badContent(name, err)
	case fm["description"] == "":
		return badContent(name, errors.New("front matter needs a description"))
	}
	return nil
}

func badContent(name string, err error) error {
	return errs.E(errs.Invalid, name+": "+err.Error())
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
