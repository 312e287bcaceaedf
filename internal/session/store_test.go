package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readString(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Logs not kept open are opened for each write and closed again; kept
// open, they take writes without opening; either way every write lands,
// in order, at the end.
func TestLogs(t *testing.T) {
	dir := t.TempDir()
	l := logs{dir: dir}
	if err := l.write("chat", []byte("a\n"), true); err != nil {
		t.Fatal(err)
	}
	if l.isOpen() || len(l.open) != 0 {
		t.Fatal("a write opened the logs for good")
	}
	l.keep()
	if !l.isOpen() || len(l.open) != len(kept) {
		t.Fatalf("keep opened %d logs", len(l.open))
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("keep made no %s: %v", name, err)
		}
	}
	if err := l.write("chat", []byte("b\n"), false); err != nil {
		t.Fatal(err)
	}
	if err := l.write("other.log", []byte("x"), false); err != nil { // not one of kept: opened, and kept
		t.Fatal(err)
	}
	if err := l.sync(); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(dir, "chat")); got != "a\nb\n" {
		t.Errorf("chat %q", got)
	}
	// A log replaced by a new file (Clear, compaction): after reopen, the
	// writes go to the new file, not to the removed one.
	ctx := filepath.Join(dir, "context.jsonl")
	l.write("context.jsonl", []byte("old\n"), false)
	l.reopen("context.jsonl")
	if err := writeAtomic(ctx, []byte("new\n"), 0600); err != nil {
		t.Fatal(err)
	}
	l.write("context.jsonl", []byte("more\n"), false)
	if got := readString(t, ctx); got != "new\nmore\n" {
		t.Errorf("context %q", got)
	}
	l.close()
	if l.isOpen() {
		t.Error("closed logs are open")
	}
	l.close() // twice is harmless
	if err := l.write("chat", []byte("c\n"), true); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(dir, "chat")); got != "a\nb\nc\n" {
		t.Errorf("chat after close %q", got)
	}
	// Files are the session's owner's only.
	fi, _ := os.Stat(filepath.Join(dir, "chat"))
	if fi.Mode().Perm() != 0600 {
		t.Errorf("chat has mode %v", fi.Mode())
	}
}

// The usage record is rewritten in place at its fixed size, and reads
// back; one too big for the record is written whole instead.
func TestUsageRecord(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "usage.json")
	for _, open := range []bool{false, true} {
		l := logs{dir: dir}
		if open {
			l.keep()
		}
		for i, u := range []Usage{{Input: 123456, Output: 7, Cost: 0.25, CostKnown: true, Window: 1 << 20}, {Input: 1}} {
			if err := l.saveUsage(u); err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(name)
			if fi.Size() != usageSize {
				t.Errorf("record %d of %d bytes", i, fi.Size())
			}
			var got Usage
			loadUsage(name, &got)
			if got != u {
				t.Errorf("open=%v: saved %+v, read %+v", open, u, got)
			}
		}
		if open != (l.usageF != nil) {
			t.Errorf("open=%v: usage file kept %v", open, l.usageF != nil)
		}
		l.close()
	}
	// A record that a kill cut, or a missing file, reads as no usage.
	os.WriteFile(name, []byte(`{"input":1`), 0600)
	var u Usage
	loadUsage(name, &u)
	loadUsage(filepath.Join(dir, "none"), &u)
	if u != (Usage{}) {
		t.Errorf("read %+v", u)
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	for _, data := range []string{"one", "", strings.Repeat("z", 1<<20)} {
		if err := writeAtomic(name, []byte(data), 0600); err != nil {
			t.Fatal(err)
		}
		if got := readString(t, name); got != data {
			t.Errorf("read %d bytes, wrote %d", len(got), len(data))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left %v", ents)
	}
	// A failed replace (the rename fails: a directory holds the name)
	// leaves the old content and no temporary file.
	busy := filepath.Join(dir, "busy")
	testFile(t, filepath.Join(busy, "inside"), "kept")
	if err := writeAtomic(busy, []byte("lost"), 0600); err == nil {
		t.Error("a replace of a non-empty directory succeeded")
	}
	if got := readString(t, filepath.Join(busy, "inside")); got != "kept" {
		t.Errorf("the old content is %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left %v", ents)
	}
}

func testFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0600); err != nil {
		t.Fatal(err)
	}
}
