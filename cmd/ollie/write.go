package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

var writeFlags struct {
	addrFlag
	appendMode bool
}

func init() {
	register(&command{
		name:  "write",
		args:  "[-a] [-addr ADDR [-token FILE]] PATH",
		short: "write standard input to a file of the tree over 9P",
		long: `Write standard input to PATH, replacing its content (or appending with
-a). A file that does not exist is created where the tree allows it. Input
up to one 9P message is sent as a single write, so 'echo stop | ollie
write s/ID/ctl' is one command. The message is committed when the file is
closed; a refused write or close prints the daemon's reason and exits 1:

	$ echo temperature=9 | ollie write s/x/cfg
	ollie write: s/x/cfg: bad request: temperature=9: want a number from 0 to 2

(Through the mount the same failure is only "Invalid argument"; the
reason is then in $OLLIE/errors.)`,
		flags: func(fs *flag.FlagSet) {
			writeFlags.declare(fs)
			fs.BoolVar(&writeFlags.appendMode, "a", false, "append instead of replacing")
		},
		run: runWrite,
	})
}

func runWrite(ctx context.Context, env *Env, args []string) error {
	if len(args) != 1 {
		return usagef("want exactly one PATH")
	}
	fsys, err := writeFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	p := treePath(args[0])
	mode := uint8(plan9.OWRITE)
	if !writeFlags.appendMode {
		mode |= plan9.OTRUNC
	}
	f, err := fsys.Open(ctx, p, mode)
	if errs.Is(err, errs.NotExist) {
		f, err = fsys.Create(ctx, p, 0644, plan9.OWRITE)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	err = copyIn(ctx, f, env.Stdin)
	if err == nil {
		err = f.Sync(ctx)
	}
	// The close commits the message (NAMESPACE rule 1): its error is the
	// write's as much as any Rwrite's.
	if cerr := f.Clunk(context.Background()); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return nil
}

// copyIn writes r to f from its end (-a) or from 0, one message at a time.
func copyIn(ctx context.Context, f *client.Fid, r io.Reader) error {
	var off int64
	if writeFlags.appendMode {
		if st, err := f.Stat(ctx); err == nil {
			off = int64(st.Length)
		}
	}
	buf := make([]byte, max(f.Iounit(), 8192))
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if _, err := f.WriteAt(ctx, buf[:n], off); err != nil {
				return err
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
