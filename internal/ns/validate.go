package ns

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"ollie.dev/ollie/internal/agentcfg"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/index"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
	"ollie.dev/ollie/internal/valid"
)

// agentRefs validates a/*.json against what the daemon has: its backends,
// its sandbox profiles and the prompt parts in p/. parts is set by Build
// once p/ is open; until then prompt parts are not checked.
type agentRefs struct {
	cfg   *config.Config
	parts *os.Root
}

// validAgent is the Validate of a/: strict JSON (agentcfg.Parse), then
// every name it refers to must exist.
func (r *agentRefs) validAgent(name string, data []byte) error {
	a, err := agentcfg.Parse(data)
	switch {
	case errors.Is(err, agentcfg.ErrIncomplete):
		return tree.ErrIncomplete
	case err != nil:
		return badContent(name, err)
	}
	if err := a.CheckRefs(r.refs()); err != nil {
		return badContent(name, err)
	}
	return nil
}

func (r *agentRefs) refs() agentcfg.Refs {
	var refs agentcfg.Refs
	if r.cfg != nil {
		refs.Backends, refs.Profiles = []string{}, []string{}
		for _, b := range r.cfg.Backends {
			refs.Backends = append(refs.Backends, b.Name)
		}
		for p := range r.cfg.Sandbox.Profiles {
			refs.Profiles = append(refs.Profiles, p)
		}
	}
	if root := r.parts; root != nil {
		refs.Part = func(n string) bool {
			fi, err := root.Stat(n)
			return err == nil && fi.Mode().IsRegular()
		}
		refs.Parts = func() []string { return listParts(root) }
	}
	return refs
}

func listParts(root *os.Root) []string {
	f, err := root.Open(".")
	if err != nil {
		return nil
	}
	defer f.Close()
	ents, _ := f.ReadDir(-1)
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// validSkill is the Validate of sk/: a skill is sk/NAME.md, UTF-8 text
// starting with front matter that has a description; its name:, if
// given, is NAME, so sk/idx and the file agree.
func validSkill(file string, data []byte) error {
	if err := valid.TextPrefix(file, data); err != nil {
		return err
	}
	want, ok := strings.CutSuffix(file, ".md")
	if !ok || want == "" {
		return badContent(file, errors.New("a skill is sk/NAME.md"))
	}
	fm, err := index.FrontMatter(data)
	switch {
	case errors.Is(err, index.ErrIncomplete):
		return tree.ErrIncomplete
	case err != nil:
		return badContent(file, err)
	case fm["description"] == "":
		return badContent(file, errors.New("front matter needs a description"))
	case fm["name"] != "" && fm["name"] != want:
		return badContent(file, fmt.Errorf("name: %q differs from the file name (want name: %s, or rename the file)", fm["name"], want))
	}
	return nil
}

func badContent(name string, err error) error {
	return errs.E(errs.Invalid, name+": "+err.Error())
}

// cfgMsg frames a write to a session's cfg: each complete line is
// checked as it arrives, values included (a dry run of SetCfg), so that
// `echo temperature=9 > cfg` fails on its write(2): bash does not report
// the error of a close.
func (d *sessionDir) cfgMsg() *msgSpec {
	return &msgSpec{what: cfgMsg.what, max: cfgMsg.max, lines: func(done string) error {
		if err := valid.String("cfg", done); err != nil {
			return err
		}
		kv, err := parseKV(done, session.CfgKeys)
		if err != nil {
			return err
		}
		return d.s.CheckCfg(kv)
	}}
}

// envMsg frames a write to a session's env the same way (CheckEnv).
func (d *sessionDir) envMsg() *msgSpec {
	return &msgSpec{what: envMsg.what, max: envMsg.max, lines: func(done string) error {
		return d.s.CheckEnv([]byte(done))
	}}
}
