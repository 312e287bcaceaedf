package ns

import (
	"errors"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/index"
	"ollie.dev/ollie/internal/tree"
)

func validSkill(name string, data []byte) error {
	fm, err := index.FrontMatter(data)
	switch {
	case errors.Is(err, index.ErrIncomplete):
		return tree.ErrIncomplete
	case err != nil:
		return badContent(name, err)
	case fm["description"] == "":
		return badContent(name, errors.New("front matter needs a description"))
	}
	return nil
}

func badContent(name string, err error) error {
	return errs.E(errs.Invalid, name+": "+err.Error())
}
