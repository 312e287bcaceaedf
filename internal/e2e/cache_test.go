package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"ollie.dev/ollie/internal/bench"
)

// TestPlainFilesAreCached checks, by the daemon's 9P counters, that a
// plain file made through the mount is read from the page cache once the
// kernel has looked it up again, and that lookups leave no fid behind.
// Both failed because go-fuse replaces the node a Lookup makes by the one
// it has for the inode number, so what a lookup learnt went nowhere.
func TestPlainFilesAreCached(t *testing.T) {
	e := start(t, func(e *env) { e.mopts.EntryTimeout = time.Millisecond })
	e.sh(`echo hello > $M/m/c`)
	path := filepath.Join(e.mnt, "m", "c")
	cat := bench.OpenReadClose(path)
	open := func() uint64 { return e.ops("walk") - e.ops("clunk") }
	before := open()
	for range 20 {
		time.Sleep(2 * time.Millisecond) // the entry expires: the next open looks it up
		if err := cat(); err != nil {
			t.Fatal(err)
		}
	}
	reads, opens := e.ops("read"), e.ops("open")
	for range 10 {
		if err := cat(); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.ops("read") - reads; n != 0 {
		t.Errorf("10 cats of an unchanged plain file made %d Treads, want 0 (page cache)", n)
	}
	if n := e.ops("open") - opens; n != 0 {
		t.Errorf("10 cats of an unchanged plain file made %d Topens, want 0 (a Tstat checks the cache)", n)
	}
	// Clunks are not waited for: give them time to arrive.
	for deadline := time.Now().Add(hangTimeout); open()-before > 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("20 lookups and opens left %d more fids on the server", open()-before)
		}
	}
	// A change behind the kernel's back is still seen at the next open.
	if err := os.WriteFile(filepath.Join(e.cfg.DataDir, "m", "c"), []byte("changed\n"), 0644); err != nil {
		t.Fatal(err)
	}
	reads = e.ops("read")
	if got := e.sh(`cat $M/m/c`); got != "changed\n" {
		t.Errorf("cat after a change on disk = %q", got)
	}
	// One Tread fills the page: a short one is the end of the file.
	if n := e.ops("read") - reads; n != 1 {
		t.Errorf("cat of a changed 8-byte file made %d Treads, want 1", n)
	}
}
