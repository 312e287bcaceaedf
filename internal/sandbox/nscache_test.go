package sandbox

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKeptNamespaceSweptUnasked: a kept namespace is dropped once unused
// past nsTTL though no stage comes to sweep it (it holds a copy of the
// tree's mount, whose unmount waits for it).
func TestKeptNamespaceSweptUnasked(t *testing.T) {
	old := nsTTL
	nsTTL = 20 * time.Millisecond
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	keepNS("swept-unasked", fd)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		nsCache.mu.Lock()
		kept, armed := nsCache.m["swept-unasked"] != nil, nsCache.sweep != nil
		if !kept && !armed {
			nsTTL = old // the sweep, done, reads it under the lock no more
			nsCache.mu.Unlock()
			return
		}
		nsCache.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: kept %v, sweep armed %v", kept, armed)
		}
	}
}
