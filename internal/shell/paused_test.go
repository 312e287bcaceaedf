package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTree lays out the files of one session as the daemon serves them,
// with wait saying what it says of a session a restart left waiting.
func fakeTree(t *testing.T, wait string) (root, ctl string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "s", "k3x9")
	if err := os.MkdirAll(dir, 0700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"s/new": "", "s/idx": "k3x9\tidle\tdefault\tollama\tm\t/w\t-\n",
		"s/k3x9/cfg":  "id=k3x9\nname=\nstate=idle\nagent=default\nbackend=\nmodel=\ncwd=/w\n",
		"s/k3x9/chat": "user: go\n:: interrupted by restart; `echo resume > ctl` continues the turn\n",
		"s/k3x9/wait": wait, "s/k3x9/state": "idle\n", "s/k3x9/ctl": "",
		"s/k3x9/usage": "", "s/k3x9/cost": "", "s/k3x9/prompt.prev": "go\n", "s/k3x9/offset": "0\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0600); err != nil {
			t.Fatal(err)
		}
	}
	return root, filepath.Join(dir, "ctl")
}

func runShell(t *testing.T, root, input string) string {
	t.Helper()
	in, err := os.CreateTemp(t.TempDir(), "in")
	if err != nil {
		t.Fatal(err)
	}
	in.WriteString(input)
	in.Seek(0, 0)
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), Options{Mount: root, Cwd: "/w", Session: "k3x9", Stdin: in, Stdout: out, Stderr: out}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	return string(b)
}

// A session whose turn a restart cut says so when the shell attaches, and
// /resume writes ctl resume.
func TestShellSaysTurnWaitsForResume(t *testing.T) {
	root, ctl := fakeTree(t, "idle: interrupted by restart; ctl resume continues\n")
	out := runShell(t, root, "/resume\n")
	if !strings.Contains(out, "the last turn was cut by a restart of the daemon and waits: /resume continues it") {
		t.Errorf("the shell does not say the turn waits:\n%s", out)
	}
	if b, _ := os.ReadFile(ctl); string(b) != "resume\n" {
		t.Errorf("/resume wrote %q to ctl", b)
	}
}

func TestShellSaysQueueWaitsForResume(t *testing.T) {
	root, _ := fakeTree(t, "idle: queued prompts wait for ctl resume after a restart\n")
	if out := runShell(t, root, ""); !strings.Contains(out, "prompts queued before a restart of the daemon wait: /resume runs them") {
		t.Errorf("the shell does not say the queue waits:\n%s", out)
	}
}

// A session that waits for nothing gets no such line.
func TestShellQuietWhenNothingWaits(t *testing.T) {
	root, _ := fakeTree(t, "idle\n")
	if out := runShell(t, root, ""); strings.Contains(out, "/resume") {
		t.Errorf("the shell speaks of /resume with nothing waiting:\n%s", out)
	}
}
