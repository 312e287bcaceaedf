package ns

import (
	"context"
	"strings"

	"ollie.dev/ollie/internal/errs"
)

// ctl runs one command written to s/<id>/ctl; its error is the write's.
func (d *sessionDir) ctl(line string) error {
	line = strings.TrimSpace(line)
	if strings.Contains(line, "\n") {
		return errs.E(errs.Invalid, "one command per write")
	}
	verb, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	noArg := func(f func() error) error {
		if arg != "" {
			return errs.E(errs.Invalid, "ctl "+verb+" takes no argument")
		}
		return f()
	}
	needArg := func(f func() error) error {
		if arg == "" {
			return errs.E(errs.Invalid, "ctl "+verb+" needs an argument")
		}
		return f()
	}
	s, m := d.s, d.parent.hooks.M
	switch verb {
	case "stop":
		return noArg(s.Stop)
	case "kill":
		return noArg(s.Kill)
	case "compact":
		return noArg(s.Compact)
	case "clear":
		return noArg(s.Clear)
	case "save":
		return noArg(s.SaveTranscript)
	case "resume":
		return noArg(s.Resume)
	case "rn":
		return needArg(func() error { return m.Rename(s.ID(), arg) })
	case "model", "backend", "agent":
		return needArg(func() error {
			if err := s.SetCfg(map[string]string{verb: arg}); err != nil {
				return err
			}
			d.parent.renderSystemPrompt(context.Background(), s)
			return nil
		})
	case "":
		return errs.E(errs.Invalid, "empty control message")
	}
	return errs.E(errs.Invalid, "unknown control message "+quoteShort(verb)+" (want stop kill compact clear save resume rn model backend agent)")
}
