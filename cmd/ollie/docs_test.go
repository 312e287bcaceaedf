package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHelpListsEveryVerb: `ollie help` lists exactly the commands there
// are, each with a line, and `ollie help VERB` shows each one's usage.
func TestHelpListsEveryVerb(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("ollie help: exit %d: %s", code, errb.String())
	}
	listed := map[string]bool{}
	_, list, _ := strings.Cut(out.String(), "Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	for line := range strings.Lines(list) {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Errorf("ollie help: a command without a description: %q", line)
			continue
		}
		c := commands[f[0]]
		if c == nil || c.hidden {
			t.Errorf("ollie help lists %q, which is no command", f[0])
		}
		listed[f[0]] = true
	}
	for name, c := range commands {
		if c.hidden {
			continue
		}
		if !listed[name] {
			t.Errorf("ollie help does not list %s", name)
		}
		var o, e bytes.Buffer
		if code := Main([]string{"help", name}, strings.NewReader(""), &o, &e); code != 0 || !strings.HasPrefix(o.String(), "usage: ollie "+name) {
			t.Errorf("ollie help %s: exit %d: %q %q", name, code, o.String(), e.String())
		}
	}
}

// docFiles are the documents whose command lines must be true.
func docFiles(t *testing.T) []string {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	return append(files, "../../README.md")
}

// ollieCmd finds `ollie VERB ARGS` up to the end of the shell command.
// `ollie-mcp ARGS` is ollie mcp's program, with its flags.
var ollieCmd = regexp.MustCompile("(?:^|[\\s`(|;&$])ollie(?: +|-)([a-z][a-z0-9]*)((?: +[^\\s`|;&)#]+)*)")

// TestDocsFlagsExist: every flag given to an ollie command in README.md
// and docs/ is one that command declares, with a value where it takes one.
func TestDocsFlagsExist(t *testing.T) {
	checked := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range ollieCmd.FindAllStringSubmatch(line, -1) {
				c := commands[m[1]]
				if c == nil {
					continue // prose: "ollie is ...", "ollie mount" is caught
				}
				fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
				if c.flags != nil {
					c.flags(fs)
				}
				if strings.Contains(m[0], "ollie-") {
					if c.name != "mcp" {
						continue // ollie-sandbox, ollie-web: not verbs
					}
					fs.String("config", "", "") // ollie's own flag, which ollie-mcp takes too
				}
				args := strings.Fields(m[2])
				for k := 0; k < len(args); k++ {
					a := args[k]
					if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
						break // flags end at the first argument
					}
					name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
					if strings.ContainsAny(name, "[]{}<>.") {
						break // a synopsis or a placeholder, not a flag
					}
					fl := fs.Lookup(name)
					if fl == nil {
						t.Errorf("%s:%d: ollie %s has no flag -%s: %s", filepath.Base(file), i+1, c.name, name, strings.TrimSpace(m[0]))
						break
					}
					checked++
					if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); (!ok || !bf.IsBoolFlag()) && !hasValue {
						k++ // its value
					}
				}
			}
		}
	}
	t.Logf("checked %d flags", checked)
	if checked < 10 {
		t.Errorf("checked only %d flags in the docs: is the pattern still right?", checked)
	}
}
