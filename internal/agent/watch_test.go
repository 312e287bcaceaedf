package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
)

// TestToolIndexFollowsTheDirectory: the index of t/ in a system prompt is
// cached, and every kind of change to t/ is in the next prompt: a tool
// added, one rewritten in place to the same size within the same mtime
// tick (which the stat fingerprint could miss), one renamed or removed,
// and t/ itself replaced by another directory.
func TestToolIndexFollowsTheDirectory(t *testing.T) {
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "t")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := New(Options{Config: &config.Config{ConfigDir: cfg}})
	if _, ok := r.watch.Gen(dir); !ok {
		t.Fatal("t/ cannot be watched: every prompt would stat it")
	}
	tool := func(name, desc string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n# description: "+desc+"\necho\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	want := func(step string, has []string, hasNot ...string) {
		t.Helper()
		idx := r.readConfig("t", "idx")
		for _, s := range has {
			if !strings.Contains(idx, s) {
				t.Errorf("%s: the index lacks %q:\n%s", step, s, idx)
			}
		}
		for _, s := range hasNot {
			if strings.Contains(idx, s) {
				t.Errorf("%s: the index still has %q:\n%s", step, s, idx)
			}
		}
	}
	tool("alpha", "first AAAA")
	want("added", []string{"alpha: first AAAA"})

	// Cached: nothing changed, so the same text without reading t/.
	r.mu.Lock()
	r.idx["t"] = kept[string]{stamp: r.stamp(dir), v: "cached\n"}
	r.mu.Unlock()
	want("unchanged", []string{"cached"})

	// Same size, rewritten in place at once.
	f, err := os.OpenFile(filepath.Join(dir, "alpha"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("BBBB"), int64(len("#!/bin/sh\n# description: first "))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want("rewritten in place", []string{"alpha: first BBBB"}, "cached", "AAAA")

	if err := os.Rename(filepath.Join(dir, "alpha"), filepath.Join(dir, "beta")); err != nil {
		t.Fatal(err)
	}
	want("renamed", []string{"beta: first BBBB"}, "alpha")
	if err := os.Remove(filepath.Join(dir, "beta")); err != nil {
		t.Fatal(err)
	}
	want("removed", nil, "beta")

	// t/ replaced: the watch was on the old directory.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tool("gamma", "in the new t")
	want("t/ replaced", []string{"gamma: in the new t"})
	tool("delta", "later")
	want("added to the new t/", []string{"gamma", "delta: later"})
}
