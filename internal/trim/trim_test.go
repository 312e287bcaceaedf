package trim

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

// writtenExeMappings returns the bytes of every read-only mapping of
// this executable or a shared library that holds private (written)
// pages, by start address.
func writtenExeMappings(t *testing.T) map[uintptr][]byte {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	out := map[uintptr][]byte{}
	var lo, hi uint64
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		fs := strings.Fields(l)
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = len(fs) >= 6 && trimmable(fs[5], exe) && !strings.Contains(fs[1], "w")
			a, z, _ := strings.Cut(fs[0], "-")
			lo, _ = strconv.ParseUint(a, 16, 64)
			hi, _ = strconv.ParseUint(z, 16, 64)
			continue
		}
		if in && len(fs) >= 2 && fs[0] == "Anonymous:" && fs[1] != "0" {
			out[uintptr(lo)] = readMem(t, uintptr(lo), int(hi-lo))
		}
	}
	return out
}

func readMem(t *testing.T, addr uintptr, n int) []byte {
	f, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(addr)); err != nil {
		t.Fatal(err)
	}
	return b
}

// After Executable no part of the executable is mapped by huge pages,
// and the code still runs: what it dropped faults back in unchanged.
func TestTrimExecutable(t *testing.T) {
	before, _ := exeMappings(t)
	written := writtenExeMappings(t)
	Executable()
	for addr, want := range written {
		if got := readMem(t, addr, len(want)); string(got) != string(want) {
			t.Fatalf("the read-only mapping at %#x that the loader wrote (RELRO) changed in the trim: "+
				"its relocated bytes are gone", addr)
		}
	}
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
