package sandbox

import (
	"os"
	"strings"
)

// A mount is a line of /proc/self/mountinfo.
type mount struct {
	root, point string // the mount's root in its file system, where it is mounted
	fstype      string
	superOpts   string // the file system's options
}

// mounts reads the mount table of the daemon's mount namespace.
func mounts() ([]mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []mount
	for _, l := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		out = append(out, mount{root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype: g[0], superOpts: g[2]})
	}
	return out, nil
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

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
