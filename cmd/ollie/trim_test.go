package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// exeMappings returns the Rss and FilePmdMapped (KB) of the read-only
// mappings of this executable, from /proc/self/smaps.
func exeMappings(t *testing.T) (rss, pmd int) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		fs := strings.Fields(l)
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = len(fs) >= 6 && fs[5] == exe && !strings.Contains(fs[1], "w")
			continue
		}
		if !in || len(fs) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fs[1])
		switch fs[0] {
		case "Rss:":
			rss += v
		case "FilePmdMapped:":
			pmd += v
		}
	}
	return rss, pmd
}

// After trimExecutable no part of the executable is mapped by huge pages,
// and the code still runs: what it dropped faults back in unchanged.
func TestTrimExecutable(t *testing.T) {
	before, _ := exeMappings(t)
	trimExecutable()
	// Code and read-only data the test had not touched since the trim.
	var v map[string][]int
	if err := json.Unmarshal([]byte(`{"a":[1,2,3]}`), &v); err != nil || len(v["a"]) != 3 {
		t.Fatalf("after the trim: %v %v", v, err)
	}
	if out := strings.Repeat("ab", 3); out != "ababab" {
		t.Fatalf("after the trim: %q", out)
	}
	rss, pmd := exeMappings(t)
	if pmd != 0 {
		t.Errorf("%d KB of the executable still mapped by huge pages after the trim", pmd)
	}
	t.Logf("executable resident: %d KB before, %d KB after the trim", before, rss)
}
