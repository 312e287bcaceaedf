package execute

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A project that ollie is built into: the session's cwd holds bin/ollie,
// the executable the daemon runs (and its helper, which is ollie itself
// here). A stage must not plant an ollie-sandbox beside it, which the
// daemon would run unconfined as the next helper, nor an ollie-mcp or an
// ollie-web, which `ollie mcp` and `ollie web` in the user's shell would
// become, nor replace ollie.
func TestStageCannotPlantAHelper(t *testing.T) {
	f := newFixture(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(f.cwd, "bin")
	mkdir(t, bin)
	ollie := filepath.Join(bin, "ollie")
	if err := os.Link(exe, ollie); err != nil {
		t.Skipf("a link to the test binary: %v", err)
	}
	ex, err := New(Options{Exe: ollie, Sandbox: f.sb, Home: f.home, Environ: f.environ,
		Private: []string{f.cfgDir, f.dataDir, f.stateDir, f.runtimeDir}})
	if err != nil {
		t.Fatal(err)
	}
	script := `for f in bin/ollie-sandbox bin/ollie-mcp bin/ollie-web bin/ollie; do
	(printf '#!/bin/sh\nid\n' > "$f.new" && chmod +x "$f.new" && mv "$f.new" "$f") 2>/dev/null && echo "planted $f" || echo "refused $f"
done`
	res, err := ex.Run(context.Background(), f.spec(), []byte(code("sh", script)))
	if err != nil {
		t.Fatal(err)
	}
	out := res.String()
	for _, name := range []string{"ollie-sandbox", "ollie-mcp", "ollie-web", "ollie"} {
		if !strings.Contains(out, "refused bin/"+name+"\n") {
			t.Errorf("bin/%s: %s", name, out)
		}
	}
	if strings.Contains(out, "planted") {
		t.Fatalf("%s", out)
	}
	for _, name := range []string{"ollie-sandbox", "ollie-mcp", "ollie-web"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err == nil {
			t.Errorf("a stage planted %s beside ollie", name)
		}
	}
}
