package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

var catFlags struct{ addrFlag }

func init() {
	register(&command{
		name:  "cat",
		args:  "[-addr ADDR [-token FILE]] PATH ...",
		short: "print files of the tree over 9P",
		long: `Copy each file to standard output as it is read, so blocking files
(wait, events, statewait) stream; Ctrl-C ends the read at once. A file
that cannot be opened or read prints the daemon's reason and exits 1
('ollie cat s/x/models' says why the backend could not be asked); the
recent errors of everyone's writes are in the file errors
('ollie cat errors').`,
		flags: func(fs *flag.FlagSet) { catFlags.declare(fs) },
		run:   runCat,
	})
}

func runCat(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("no file named")
	}
	fsys, err := catFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	for _, a := range args {
		f, err := fsys.Open(ctx, treePath(a), plan9.OREAD)
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		err = copyOut(ctx, env.Stdout, func(p []byte, off int64) (int, error) { return f.Read(ctx, p, off) }, f.Iounit())
		if cerr := f.Clunk(context.Background()); err == nil {
			err = cerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return errs.E(errs.Interrupted)
			}
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}

// copyOut copies a file read one message at a time to w, writing each
// piece as soon as it arrives.
func copyOut(ctx context.Context, w io.Writer, read func([]byte, int64) (int, error), iounit uint32) error {
	buf := make([]byte, max(iounit, 8192))
	var off int64
	for {
		n, err := read(buf, off)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
