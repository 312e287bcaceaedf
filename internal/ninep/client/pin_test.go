package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cfg", "known_hosts")
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	steps := []struct {
		key, fp string
		pinned  bool
		err     error
	}{
		{"tcp!h!1", a, true, nil},  // first use: pinned
		{"tcp!h!1", a, false, nil}, // the same: nothing to do
		{"tcp!h!2", b, true, nil},  // another port is another daemon
		{"tcp!h!1", b, false, ErrCertChanged},
		{"tcp!h!2", b, false, nil},
	}
	for i, s := range steps {
		pinned, err := checkPin(file, s.key, s.fp)
		if pinned != s.pinned || !errors.Is(err, s.err) || (err == nil) != (s.err == nil) {
			t.Fatalf("step %d: %v %v, want %v %v", i, pinned, err, s.pinned, s.err)
		}
		if err != nil && !strings.Contains(err.Error(), file) {
			t.Errorf("step %d: %v does not name %s", i, err, file)
		}
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0600 {
		t.Fatalf("known_hosts: %v %v, want mode 0600", fi.Mode(), err)
	}
	os.WriteFile(file, []byte("tcp!h!1 "+a+"\ngarbage\n"), 0600)
	if _, err := checkPin(file, "tcp!h!3", a); err == nil || !strings.Contains(err.Error(), file+":2: bad line") {
		t.Fatalf("damaged file: %v, want an error naming line 2", err)
	}
}

// FuzzFindPin: whatever the file holds, finding a pin never panics, and
// a pin found is one that a line of the file gave in full.
func FuzzFindPin(f *testing.F) {
	f.Add([]byte("tcp!h!1 sha256:"+strings.Repeat("a", 64)+"\n# note\n\n"), "tcp!h!1")
	f.Add([]byte("tcp!h!1\n"), "tcp!h!1")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		fp, err := findPin("f", data, key)
		if err == nil && fp != "" && (!strings.HasPrefix(fp, "sha256:") || len(fp) != 71 || !strings.Contains(string(data), key+" ")) {
			t.Fatalf("findPin(%q, %q) = %q", data, key, fp)
		}
	})
}
