package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/testutil"
)

// TestBench runs every section of `ollie bench` a few times: the command
// must start its daemon and mounts, measure, print one row per operation
// with the ratios to their floors, and clean up. (The numbers of so short
// a run mean nothing; no test asserts on timings.) The mcp section, 3 s
// of Node servers starting, runs mcpbridge.Bench, which TestMCPBench runs
// and checks already; OLLIE_TEST_BENCH=all adds it here too, as the
// benchmark's own check.
func TestBench(t *testing.T) {
	testutil.RequireFUSE(t)
	benchExeEnv = []string{"OLLIE_TEST_MAIN=1"}
	defer func() { benchExeEnv = nil }()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Argv0: os.Args[0]}
	want := []string{"9p.read", "9p.floor4", "9p.pread", "fuse.read", "fuse.memfs", "fuse.tmpfs", "x 9p.floor4", "x fuse.memfs", "goal <= 2x",
		"session.new", "turn.runtime", "mem.100", "conc.20x5", "restart"}
	var only []string
	for _, s := range benchSections {
		if s.name != "mcp" || os.Getenv("OLLIE_TEST_BENCH") == "all" {
			only = append(only, s.name)
		}
	}
	if slices.Contains(only, "mcp") {
		want = append(want, "mcp.bridge", "mcp.tokens", "mcp.toollist")
	}
	benchFlags.n, benchFlags.only = 2, strings.Join(only, ",")
	if err := runBench(context.Background(), env, nil); err != nil {
		t.Fatalf("ollie bench: %v\n%s%s", err, out.String(), errb.String())
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("ollie bench output lacks %q:\n%s", w, out.String())
		}
	}
	benchFlags.only = "nosuch"
	if err := runBench(context.Background(), env, nil); err == nil || !strings.Contains(err.Error(), "unknown section") {
		t.Errorf("-only nosuch: %v", err)
	}
	benchFlags.only = ""
}
