package session

import "testing"

func TestLRU(t *testing.T) {
	c := newLRU[string](2)
	for _, x := range []string{"a", "b"} {
		if _, ok := c.touch(x); ok {
			t.Fatalf("%s evicted at %d of 2", x, c.len())
		}
	}
	c.touch("a") // now a is the most recent: b goes first
	if ev, ok := c.touch("c"); !ok || ev != "b" {
		t.Fatalf("evicted %q %v, want b", ev, ok)
	}
	if ev, ok := c.touch("d"); !ok || ev != "a" {
		t.Fatalf("evicted %q %v, want a", ev, ok)
	}
	if c.len() != 2 {
		t.Fatalf("len %d", c.len())
	}
	// An evicted member comes back as a new one.
	if ev, ok := c.touch("b"); !ok || ev != "c" {
		t.Fatalf("evicted %q %v, want c", ev, ok)
	}
	c.remove("d")
	c.remove("nobody")
	if _, ok := c.touch("e"); ok || c.len() != 2 {
		t.Fatalf("after a remove, a touch evicted (len %d)", c.len())
	}
	// A member is never evicted by its own touch, even with room for none.
	z := newLRU[string](0)
	if _, ok := z.touch("only"); ok {
		t.Error("a lone member evicted itself")
	}
	if ev, ok := z.touch("next"); !ok || ev != "only" {
		t.Errorf("evicted %q %v", ev, ok)
	}
}
