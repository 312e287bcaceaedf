// Package mountinfo reads the mount table of the calling process's mount
// namespace, /proc/self/mountinfo (proc(5)).
package mountinfo

import (
	"os"
	"strings"
)

// A Mount is a line of the table.
type Mount struct {
	Root, Point string // the mount's root in its file system, and where it is mounted
	FSType      string
	SuperOpts   string // the file system's options
}

// Read reads the table.
func Read() ([]Mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return parse(string(b)), nil
}

// parse reads the lines of a table; a line it cannot read is left out.
func parse(table string) []Mount {
	var out []Mount
	for _, l := range strings.Split(table, "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		out = append(out, Mount{Root: unescape(f[3]), Point: unescape(f[4]), FSType: g[0], SuperOpts: g[2]})
	}
	return out
}

// IsMountPoint reports whether dir is listed in the table.
func IsMountPoint(dir string) bool {
	ms, err := Read()
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m.Point == dir {
			return true
		}
	}
	return false
}

// unescape undoes the octal escapes of the table (\040 for a space).
func unescape(s string) string {
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
