package main

import (
	"context"
	"errors"
)

// mountInProcess mounts the tree served at addr on dir and returns the
// function that unmounts it. It is replaced by the FUSE bridge.
func mountInProcess(ctx context.Context, env *Env, dir, addr string) (func(), error) {
	return nil, errors.New("FUSE mounting is not built in yet")
}
