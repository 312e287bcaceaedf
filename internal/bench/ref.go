package bench

import "errors"

// reference measures the reference daemon (Options.Ref) with the same
// client and scripted model, filling in the rows' Ref.
func (r *run) reference() error {
	return errors.New("not yet")
}
