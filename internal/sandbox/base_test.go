package sandbox

import (
	"testing"
	"time"

	"ollie.dev/ollie/internal/config"
)

// TestBaseMadeAgainOnUse: the warmed base is what New uses; one used when
// older than half the TTL is made again in the background while the call
// goes on with it; one older than the TTL is made again by the call; and
// while nothing uses it, nothing is made.
func TestBaseMadeAgainOnUse(t *testing.T) {
	const ttl = 200 * time.Millisecond
	old := baseTTLNanos.Load()
	baseTTLNanos.Store(int64(ttl))
	defer baseTTLNanos.Store(old)

	home, cwd, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	prof := config.BuiltinProfiles()["workspace"]
	private := []string{t.TempDir()}
	key := baseKey(prof, Paths{Home: home, Private: private})
	at := func() time.Time {
		bases.mu.Lock()
		defer bases.mu.Unlock()
		b, ok := bases.m[key]
		if !ok {
			t.Fatal("no base kept")
		}
		return b.at
	}
	use := func() {
		t.Helper()
		if _, err := New("workspace", prof, Paths{Home: home, Cwd: cwd, Tmp: tmp, Private: private}); err != nil {
			t.Fatal(err)
		}
	}
	WarmBase(prof, home, private)
	first := at()
	use()
	if at() != first {
		t.Fatal("a base younger than half the TTL was made again")
	}
	// Unused for three TTLs: nothing made meanwhile.
	time.Sleep(3 * ttl)
	if at() != first {
		t.Fatal("a base nothing used was made again")
	}
	// Older than the TTL: made again by the call.
	use()
	second := at()
	if !second.After(first) {
		t.Fatal("a base older than the TTL was used as it was")
	}
	// Between half the TTL and the TTL: used, and made again behind.
	time.Sleep(ttl*6/10 - time.Since(second))
	use()
	deadline := time.Now().Add(10 * time.Second)
	for !at().After(second) {
		if time.Now().After(deadline) {
			t.Fatal("a base older than half the TTL, used, was not made again in the background")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
