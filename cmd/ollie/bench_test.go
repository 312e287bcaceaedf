package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/testutil"
)

// TestBench runs `ollie bench` with tiny counts: it must start the daemon,
// the models, the echo floor and the mount as processes of their own,
// measure every group, and print a row with a number for each measure and
// a ratio for each row that has a floor. (The numbers of so short a run
// mean nothing; nothing here looks at them.)
func TestBench(t *testing.T) {
	testutil.RequireFUSE(t)
	if testing.Short() {
		t.Skip("starts a dozen daemons")
	}
	var out, log bytes.Buffer
	o := bench.Options{Exe: os.Args[0], Env: []string{"OLLIE_TEST_MAIN=1"}, N: 5, Turns: 3, Rounds: 1, Small: true, Log: &log}
	if err := bench.Run(context.Background(), o, &out); err != nil {
		t.Fatalf("ollie bench: %v\n%s\n%s", err, out.String(), log.String())
	}
	number := regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)? (µs|ms|s|KB|MB|MB/s)$`)
	rows := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		key := strings.Trim(strings.Fields(cells[0])[1], "`")
		rows[key] = true
		if !number.MatchString(cells[1]) {
			t.Errorf("row %s: value %q is not a number", key, cells[1])
		}
		if cells[2] != "" && !regexp.MustCompile(`^[0-9]+\.[0-9]{2}$`).MatchString(cells[3]) {
			t.Errorf("row %s has a floor but no ratio: %q", key, line)
		}
	}
	for _, k := range []string{"floor.rt4", "9p.read", "9p.pread", "fuse.read", "floor.mkdir", "session.new", "session.clone", "floor.fork",
		"turn", "turn.cpu", "turn.stage", "fresh.install", "fresh.startup", "fresh.turn", "mem.idle", "floor.cat", "ingest", "ingest.follow",
		"ingest.lag", "ingest.paced.lag", "load.20x3.p99", "load.50x1.wall", "scale.10", "scale.30", "scale.restart"} {
		if !rows[k] {
			t.Errorf("no row %s:\n%s", k, out.String())
		}
	}
	if err := bench.Run(context.Background(), bench.Options{Exe: os.Args[0], Only: []string{"nosuch"}}, &out); err == nil ||
		!strings.Contains(err.Error(), "unknown group") {
		t.Errorf("-only nosuch: %v", err)
	}
}
