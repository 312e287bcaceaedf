package ns

import (
	"errors"
	"io/fs"
	"testing"

	"ollie.dev/ollie/defaults"
	"ollie.dev/ollie/internal/tree"
)

// FuzzValidPrefixes: a file the tree accepts whole is never refused at
// one of its prefixes. A writer's bytes are checked as they arrive (rule
// 1 of NAMESPACE.md), and a write may stop anywhere (bash writes a line
// at a time, FUSE splits large writes), so a check that refused an
// unfinished prefix of a good skill or agent would refuse the file.
func FuzzValidPrefixes(f *testing.F) {
	for _, dir := range []string{"a", "sk"} {
		ents, _ := fs.ReadDir(defaults.FS(), dir)
		for _, e := range ents {
			b, err := fs.ReadFile(defaults.FS(), dir+"/"+e.Name())
			if err == nil {
				f.Add(b, uint(len(b)/2))
			}
		}
	}
	f.Add([]byte("---\nname: x\ndescription: \"a\"\n---\nbody\n"), uint(17))
	f.Add([]byte(`{"model":"m","temperature":0.25,"max_steps":12}`), uint(40))
	refs := &agentRefs{}
	f.Fuzz(func(t *testing.T, data []byte, cut uint) {
		checks := map[string]func([]byte) error{
			"sk/x.md":  func(b []byte) error { return validSkill("x.md", b) },
			"a/x.json": func(b []byte) error { return refs.validAgent("x.json", b) },
		}
		for what, check := range checks {
			if check(data) != nil || len(data) == 0 {
				continue
			}
			k := int(cut % uint(len(data)))
			if err := check(data[:k]); err != nil && !errors.Is(err, tree.ErrIncomplete) {
				t.Fatalf("%s: %q is accepted whole, but its first %d bytes are refused: %v", what, data, k, err)
			}
		}
	})
}
