package main

import (
	"context"
	"log"

	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/ninep/client"
)

// mountInProcess mounts the tree served at addr on dir, in this process,
// and returns the function that unmounts it (a shutdown handler).
func mountInProcess(ctx context.Context, env *Env, dir, addr string) (func(), error) {
	if err := prepareMountPoint(dir); err != nil {
		return nil, err
	}
	logger := log.New(env.Stderr, "ollie: ", log.LstdFlags) // the daemon's prefix; the lines say "ollie mount:"
	d := env.dialer("")
	dial := func(ctx context.Context) (*client.Conn, error) { return d.Dial(ctx, addr) }
	srv, err := fusebridge.Mount(ctx, dir, dial, fusebridge.Options{Uname: userName(), Logf: logger.Printf})
	if err != nil {
		return nil, err
	}
	return func() {
		if err := srv.Unmount(); err != nil {
			logger.Printf("unmount %s: %v", dir, err)
		}
	}, nil
}
