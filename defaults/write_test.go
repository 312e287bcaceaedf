package defaults

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// In process: Install on a root where everything is installed already,
// as every start of the daemon calls it.
func BenchmarkInstallInstalled(b *testing.B) {
	root := b.TempDir()
	dirs := []string{"a", "p", "sk", "t", "u", "x", "s", "b"}
	if _, err := Install(root, dirs...); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Install(root, dirs...); err != nil {
			b.Fatal(err)
		}
	}
}

// atOnce calls every index once, and reports an error of one of them.
func TestAtOnce(t *testing.T) {
	for _, n := range []int{0, 1, writers - 1, writers, 3*writers + 1} {
		var mu sync.Mutex
		seen := map[int]int{}
		err := atOnce(n, func(i int) error {
			mu.Lock()
			seen[i]++
			mu.Unlock()
			if i == n-1 {
				return errors.New("the last failed")
			}
			return nil
		})
		if n > 0 && (err == nil || err.Error() != "the last failed") {
			t.Errorf("n=%d: error %v, want the last one's", n, err)
		}
		if n == 0 && err != nil {
			t.Errorf("n=0: %v", err)
		}
		if len(seen) != n {
			t.Errorf("n=%d: %d indexes called", n, len(seen))
		}
		for i, c := range seen {
			if c != 1 || i < 0 || i >= n {
				t.Errorf("n=%d: index %d called %d times", n, i, c)
			}
		}
	}
}

// A first install whose files cannot all be written fails, and records
// nothing as installed: the next one tries them all again.
func TestInstallFailureRecordsNothing(t *testing.T) {
	root := t.TempDir()
	// t/ is a file: nothing can be written under it.
	if err := os.WriteFile(filepath.Join(root, "t"), []byte("in the way\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(root, "a", "t"); err == nil {
		t.Fatal("Install wrote under a file")
	}
	if _, err := os.Stat(filepath.Join(root, manifestName)); !os.IsNotExist(err) {
		t.Fatalf("a manifest after a failed install: %v", err)
	}
	if err := os.Remove(filepath.Join(root, "t")); err != nil {
		t.Fatal(err)
	}
	rep, err := Install(root, "a", "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Installed) == 0 || !slices.ContainsFunc(rep.Installed, func(p string) bool { return strings.HasPrefix(p, "a/") }) {
		t.Errorf("the second install installed %v, want a/ and t/ again", rep.Installed)
	}
}
