package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"ollie.dev/ollie/internal/config"
)

// BenchmarkPrepare is the per-call cost of the policy: carving (cached),
// /proc, and the Landlock ruleset.
func BenchmarkPrepare(b *testing.B) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	cwd, tmp := filepath.Join(home, "p"), filepath.Join(root, "tmp")
	os.MkdirAll(cwd, 0o755)
	os.MkdirAll(tmp, 0o755)
	prof := config.BuiltinProfiles()["workspace"]
	for b.Loop() {
		pol, err := New("workspace", prof, Paths{Home: home, Cwd: cwd, Tmp: tmp})
		if err != nil {
			b.Fatal(err)
		}
		pr, err := pol.Prepare(false)
		if err != nil {
			b.Fatal(err)
		}
		pr.Close()
	}
}
