package sandbox

import (
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
)

// TestBaseKeptFreshWhileUsed: the warmed base is what New uses; while it
// is used it is made again in the background (no call waits for it), and
// once unused for baseKeep it is dropped.
func TestBaseKeptFreshWhileUsed(t *testing.T) {
	oldRefresh, oldKeep := baseRefresh.Load(), baseKeep.Load()
	baseRefresh.Store(int64(20 * time.Millisecond))
	baseKeep.Store(int64(200 * time.Millisecond))
	defer func() { baseRefresh.Store(oldRefresh); baseKeep.Store(oldKeep) }()

	home, cwd, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	prof := config.BuiltinProfiles()["workspace"]
	private := []string{t.TempDir()}
	key := baseKey(prof, Paths{Home: home, Private: private})
	at := func() (time.Time, bool) {
		bases.mu.Lock()
		defer bases.mu.Unlock()
		b, ok := bases.m[key]
		if !ok {
			return time.Time{}, false
		}
		return b.at, true
	}
	WarmBase(prof, home, private)
	first, ok := at()
	if !ok {
		t.Fatal("WarmBase kept nothing")
	}
	// Used every 10 ms for 150 ms: made again meanwhile, never dropped.
	for range 15 {
		if _, err := New("workspace", prof, Paths{Home: home, Cwd: cwd, Tmp: tmp, Private: private}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	later, ok := at()
	if !ok || !later.After(first) {
		t.Fatalf("while used: kept %v, made at %v then %v; want it made again", ok, first, later)
	}
	// Unused: dropped after baseKeep.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := at(); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an unused base was kept for 10 s with baseKeep 200 ms")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
