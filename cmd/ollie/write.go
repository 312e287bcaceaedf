package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
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
write s/ID/ctl' is one command; a failed write is reported and exits 1.`,
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
		return fmt.Errorf("%s: %v", args[0], err)
	}
	defer f.Clunk(context.Background())
	var off int64
	if writeFlags.appendMode {
		if st, err := f.Stat(ctx); err == nil {
			off = int64(st.Length)
		}
	}
	buf := make([]byte, max(f.Iounit(), 8192))
	for {
		n, rerr := io.ReadFull(env.Stdin, buf)
		if n > 0 {
			if _, err := f.WriteAt(ctx, buf[:n], off); err != nil {
				return fmt.Errorf("%s: %v", args[0], err)
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	return f.Sync(ctx)
}
