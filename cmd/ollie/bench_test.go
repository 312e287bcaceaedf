package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/testutil"
)

// TestBench runs every section of `ollie bench` a few times: the command
// must start its daemon and mounts, measure, print one row per operation
// with the ratios to their floors, and clean up. (The numbers of so short
// a run mean nothing; no test asserts on timings.)
func TestBench(t *testing.T) {
	testutil.RequireFUSE(t)
	benchExeEnv = []string{"OLLIE_TEST_MAIN=1"}
	defer func() { benchExeEnv = nil }()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Argv0: os.Args[0]}
	benchFlags.n, benchFlags.only = 20, ""
	if err := runBench(context.Background(), env, nil); err != nil {
		t.Fatalf("ollie bench: %v\n%s%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"9p.read", "9p.floor4", "9p.pread", "fuse.read", "fuse.memfs", "fuse.tmpfs", "x 9p.floor4", "x fuse.memfs", "goal <= 2x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ollie bench output lacks %q:\n%s", want, out.String())
		}
	}
	benchFlags.only = "nosuch"
	if err := runBench(context.Background(), env, nil); err == nil || !strings.Contains(err.Error(), "unknown section") {
		t.Errorf("-only nosuch: %v", err)
	}
	benchFlags.only = ""
}
