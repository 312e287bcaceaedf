package trim

import "testing"

// The trim comes at the first look that sees no request after one that
// saw some; never while requests keep coming, never twice for one burst,
// and not at all for a daemon that served nothing.
func TestIdleTrimmer(t *testing.T) {
	var ops uint64
	trims := 0
	it := &idleTrimmer{ops: func() uint64 { return ops }, trim: func() { trims++ }}
	for _, s := range []struct {
		add   uint64
		trims int
		what  string
	}{
		{0, 0, "a daemon that served nothing"},
		{0, 0, "a daemon that served nothing"},
		{5, 0, "requests coming"},
		{5, 0, "requests still coming"},
		{0, 1, "the first quiet look"},
		{0, 1, "a second quiet look"},
		{1, 1, "a new burst"},
		{0, 2, "quiet after the new burst"},
	} {
		ops += s.add
		it.look()
		if trims != s.trims {
			t.Fatalf("after %s: %d trims, want %d", s.what, trims, s.trims)
		}
	}
}
