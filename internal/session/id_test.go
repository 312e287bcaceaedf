package session

import "testing"

// Ids are random within their second, so many sessions made at once draw
// some twice: New must draw again, never fail or share a directory.
func TestManySessionsAtOnce(t *testing.T) {
	m, err := Open(Options{Dir: t.TempDir(), TrDir: t.TempDir(), DefaultAgent: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cwd := t.TempDir()
	seen := map[string]bool{}
	for i := 0; i < 3000; i++ {
		s, err := m.New(Spec{Cwd: cwd})
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if seen[s.ID()] || !validID(s.ID()) || len(s.ID()) != 12 {
			t.Fatalf("id %q: taken twice or ill-formed", s.ID())
		}
		seen[s.ID()] = true
	}
	if _, ok := m.Get("nope"); ok {
		t.Errorf("Get found a session for a key that is no id, name or prefix")
	}
}
