package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Bad command lines fail in the writer's process with status 2 and say
// why; -h shows the flags.
func TestCommandLine(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-addr", "0.0.0.0:0"}, 2, "only loopback"},
		{[]string{"-addr", "nonsense"}, 2, "-addr"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-bogus"}, 2, "flag provided but not defined"},
		{[]string{"-h"}, 0, "-daemon ADDR"},
		{[]string{"-config", "/no/such/file.json"}, 1, "no such file"},
		{[]string{"-daemon", filepath.Join(t.TempDir(), "none.sock")}, 1, "cannot reach the ollie daemon"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("ollie-web %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), code, errb.String(), c.code, c.want)
		}
	}
}
