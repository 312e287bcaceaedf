package defaults

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"testing"
)

// TestScriptsParse checks the shipped shell scripts with dash -n (the
// /bin/sh they run under on Debian) and, where it is installed, with
// shellcheck in POSIX sh mode.
func TestScriptsParse(t *testing.T) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		// testutil.Require, which this package cannot import.
		if os.Getenv("CI") != "" || os.Getenv("OLLIE_REQUIRE_ALL") != "" {
			t.Fatal("dash is missing in CI (test.sh installs it)")
		}
		t.Skip("dash is not installed")
	}
	shellcheck, _ := exec.LookPath("shellcheck")
	for _, dir := range []string{"s", "b", "u"} {
		ents, err := fs.ReadDir(files, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || e.Name()[0] == '.' {
				continue
			}
			p := path.Join(dir, e.Name())
			if out, err := exec.Command(dash, "-n", p).CombinedOutput(); err != nil {
				t.Errorf("dash -n %s: %v\n%s", p, err, out)
			}
			if mode(p) != 0755 {
				t.Errorf("%s is installed with mode %v, want 0755", p, mode(p))
			}
			if shellcheck == "" {
				continue
			}
			if out, err := exec.Command(shellcheck, "-s", "sh", p).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", p, err, out)
			}
		}
	}
}
