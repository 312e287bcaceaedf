package sandbox

import "strings"

// mountOf is the mount point under which path lies: the longest of
// points that is path or a directory above it.
func mountOf(path string, points []string) string {
	best := ""
	for _, p := range points {
		if (path == p || p == "/" || strings.HasPrefix(path, p+"/")) && len(p) > len(best) {
			best = p
		}
	}
	return best
}
