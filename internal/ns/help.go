package ns

import (
	"fmt"
	"strings"

	"ollie.dev/ollie/internal/tree"
)

const helpIntro = `ollie: an agent runtime whose whole interface is this file tree.
Paths are relative to the mount point ($OLLIE). Reading never changes anything
(except fifo.out); a write takes effect, or fails with its error, on the write.
Through the mount a failure shows only as an errno (Invalid argument); its
text is in errors, newest last.

`

// renderHelp writes the help file from the same tables that define the
// tree, so it cannot drift from it.
func renderHelp(root *tree.StaticDir) []byte {
	rows := root.Help()
	w := 0
	for _, r := range rows {
		w = max(w, len(r.Path))
	}
	var b strings.Builder
	b.WriteString(helpIntro)
	fmt.Fprintf(&b, "%-*s  %-9s  %s\n", w, "path", "mode", "meaning")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s  %-9s  %s\n", w, r.Path, r.Mode, r.Doc)
	}
	b.WriteString("\n")
	b.WriteString(stageHelp())
	return []byte(b.String())
}
