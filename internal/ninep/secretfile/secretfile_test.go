package secretfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/ninep/secretfile"
)

func TestToken(t *testing.T) {
	dir := t.TempDir()
	good := strings.Repeat("0f", 32)
	for _, c := range []struct {
		text string
		mode os.FileMode
		want string // "" for good
	}{
		{good + "\n", 0600, ""},
		{good, 0400, ""},
		{good + "\n", 0640, "mode 0600"},
		{"short\n", 0600, "does not hold a token"},
		{strings.ToUpper(good), 0600, "does not hold a token"},
	} {
		p := filepath.Join(dir, "t")
		os.Remove(p)
		os.WriteFile(p, []byte(c.text), c.mode)
		tok, err := secretfile.Token(p)
		switch {
		case c.want == "" && (err != nil || string(tok) != good):
			t.Errorf("%q %v: %q %v", c.text, c.mode, tok, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q %v: %v, want %q", c.text, c.mode, err, c.want)
		}
	}
}

// What is not a secret of ours is refused: a directory, a link's target
// of another mode, a huge file; and nothing is read past the bound.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	if _, err := secretfile.Read(dir); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := secretfile.Read(""); err == nil {
		t.Error("no name: read")
	}
	if _, err := secretfile.Token(""); err == nil || !strings.Contains(err.Error(), "no token file named") {
		t.Errorf("no token file: %v", err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 1<<20+1), 0600)
	if _, err := secretfile.Read(big); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("a huge file: %v", err)
	}
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("-----BEGIN"), 0600)
	if b, err := secretfile.Read(key); err != nil || string(b) != "-----BEGIN" {
		t.Errorf("a key: %q %v", b, err)
	}
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("x"), 0644)
	os.Chmod(open, 0644)
	if _, err := secretfile.Read(open); err == nil || !strings.Contains(err.Error(), "mode 0600") {
		t.Errorf("mode 0644: %v", err)
	}
}
