package defaults_test

import (
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkSearchCalls times execute_code calls of file_grep and
// file_glob on this repository's own source against plain grep -rn and
// find in the same sandbox, and reports each one's median per call:
//
//	go test -run '^$' -bench SearchCalls -benchtime 9x ./internal/tools/
func BenchmarkSearchCalls(b *testing.B) {
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	f := newFiles(b)
	for _, c := range []struct {
		name string
		step map[string]any
	}{
		{"file_grep", tool("file_grep", `func \w+\(`, root, "--max", "100000")},
		{"grep-rn", code("sh", `grep -rnE --exclude-dir=.git 'func \w+\(' `+root+` | wc -l`)},
		{"file_glob", tool("file_glob", "**/*.go", root, "--max", "100000")},
		{"find", code("sh", "find "+root+" -name '*.go' -not -path '*/.git/*' | wc -l")},
		{"file_read", tool("file_read", filepath.Join(root, "internal/agent/loop.go"))},
		{"cat", code("sh", "cat "+filepath.Join(root, "internal/agent/loop.go")+" | wc -l")},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ds []time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if r := f.run("", c.step); r.Failed() {
					b.Fatalf("%s failed:\n%s", c.name, r.Out())
				}
				ds = append(ds, time.Since(start))
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(float64(ds[len(ds)/2].Milliseconds()), "median-ms/call")
		})
	}
}
