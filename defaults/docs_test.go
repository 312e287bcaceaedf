package defaults_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// helpPaths are the paths the tree's help file documents.
func helpPaths(t *testing.T, help string) []string {
	_, rows, ok := strings.Cut(help, "\npath ")
	if !ok {
		t.Fatalf("help has no table:\n%s", help)
	}
	rows, _, _ = strings.Cut(rows, "\n\n")
	var out []string
	for i, line := range strings.Split(rows, "\n") {
		if f := strings.Fields(line); i > 0 && len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

// TestHelpPathsExist: every path the help file names is in a fresh tree
// (with one session for <id>): help cannot promise a file that is not
// there. Rows under b/<id>/ need a job and are left to the batch tests.
func TestHelpPathsExist(t *testing.T) {
	f := newTree(t, nil)
	id := f.newSession("docs")
	paths := helpPaths(t, readTree(t, f, "help"))
	if len(paths) < 40 {
		t.Fatalf("help documents only %d paths", len(paths))
	}
	for _, p := range paths {
		if strings.HasPrefix(p, "b/<") {
			continue
		}
		p = strings.ReplaceAll(p, "s/<id>/", "s/"+id+"/")
		if strings.Contains(p, "<") {
			t.Errorf("help names %s, a pattern this test does not know", p)
			continue
		}
		if _, err := os.Stat(filepath.Join(f.mnt, p)); err != nil {
			t.Errorf("help names %s, which a fresh tree lacks: %v", p, err)
		}
	}
}

// treePath finds paths of the tree in the docs: $OLLIE/PATH, and
// s/<id>/FILE, s/ID/FILE in code spans.
var treePath = regexp.MustCompile("\\$OLLIE/([A-Za-z0-9_.<>/-]*[A-Za-z0-9_>])|`s/(?:<id>|ID|\\$ID)/([A-Za-z0-9_.-]+)")

// diskDirs hold the user's own files: a name under them is an example.
var diskDirs = map[string]bool{"a": true, "p": true, "sk": true, "t": true, "u": true, "x": true, "m": true, "tr": true, "tmp": true}

// TestDocsTreePathsExist: every path of the tree README.md and docs/ name
// is in a fresh tree, or is a user's file in a directory that holds them,
// or a file of a session (checked on a real one).
func TestDocsTreePathsExist(t *testing.T) {
	f := newTree(t, nil)
	id := f.newSession("docs")
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range treePath.FindAllStringSubmatch(string(b), -1) {
			p := m[1]
			if m[2] != "" {
				p = "s/x/" + m[2]
			}
			parts := strings.Split(strings.TrimSuffix(p, "/"), "/")
			switch {
			case len(parts) > 1 && diskDirs[parts[0]]:
				if _, err := os.Stat(filepath.Join(f.mnt, parts[0])); err != nil {
					t.Errorf("%s: %s: no directory %s", file, p, parts[0])
				}
				continue
			case parts[0] == "b" && len(parts) > 2:
				continue // a job's files: the batch tests
			case parts[0] == "s" && len(parts) > 2:
				parts[1] = id // a session by any name: its files are the same
			case parts[0] == "s" && len(parts) == 2 && (strings.Contains(parts[1], "<") || parts[1] == "ID"):
				continue // s/<id>, s/ID: a session
			}
			if _, err := os.Stat(filepath.Join(f.mnt, filepath.Join(parts...))); err != nil {
				t.Errorf("%s names %s, which a fresh tree lacks (%v)", filepath.Base(file), m[0], err)
			}
			checked++
		}
	}
	t.Logf("checked %d paths", checked)
	if checked < 15 {
		t.Errorf("checked only %d paths: is the pattern still right?", checked)
	}
}
