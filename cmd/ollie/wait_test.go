package main

import (
	"strings"
	"testing"
)

// ollie wait, without the mount: an idle session returns at once with
// status 0; an unknown one is an error naming it.
func TestWaitCommand(t *testing.T) {
	s := serveMount(t)
	if out, code := ollie(t, s.env, "cwd="+t.TempDir()+" name=w1", "write", "s/new"); code != 0 {
		t.Fatalf("ollie write s/new: %d %s", code, out)
	}
	if out, code := ollie(t, s.env, "", "wait", "w1"); code != 0 || out != "idle\n" {
		t.Errorf("ollie wait w1 = %d %q", code, out)
	}
	if out, code := ollie(t, s.env, "", "wait", "s/w1", "w1"); code != 0 || out != "s/w1: idle\nw1: idle\n" {
		t.Errorf("ollie wait s/w1 w1 = %d %q", code, out)
	}
	if out, code := ollie(t, s.env, "", "wait", "nosuch"); code != 1 || !strings.Contains(out, "nosuch") {
		t.Errorf("ollie wait nosuch = %d %q", code, out)
	}
}

// ollie help lines its commands up, however long a name is.
func TestHelpAligned(t *testing.T) {
	out, _ := ollie(t, nil, "", "help")
	col := -1
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "  ") {
			continue
		}
		f := strings.Fields(l)
		i := strings.Index(l[2+len(f[0]):], f[1]) + 2 + len(f[0])
		if col == -1 {
			col = i
		} else if i != col {
			t.Errorf("misaligned: %q (column %d, want %d)", l, i, col)
		}
	}
	if col == -1 || !strings.Contains(out, "wait") {
		t.Fatalf("no commands listed:\n%s", out)
	}
}

// A client started with a clean environment (only HOME, as MCP hosts
// start servers; with env -i even HOME comes from the password database)
// finds the daemon through the socket path it wrote in its state
// directory, though its XDG_RUNTIME_DIR is not the daemon's.
func TestFindsDaemonWithoutRuntimeDir(t *testing.T) {
	s := serveMount(t)
	var home string
	for _, e := range s.env {
		if h, ok := strings.CutPrefix(e, "HOME="); ok {
			home = h
		}
	}
	clean := []string{"HOME=" + home}
	if out, code := ollie(t, clean, "", "ls", "s"); code != 0 || !strings.Contains(out, "new") {
		t.Fatalf("ollie ls s with only HOME: %d %q", code, out)
	}
	if out, code := ollie(t, clean, "", "wait", "nosuch"); code != 1 || !strings.Contains(out, "nosuch") {
		t.Errorf("ollie wait nosuch with only HOME: %d %q", code, out)
	}
}
