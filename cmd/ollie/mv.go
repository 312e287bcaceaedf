package main

import (
	"context"
	"flag"
	"fmt"
	"path"
)

var mvFlags struct{ addrFlag }

func init() {
	register(&command{
		name:  "mv",
		args:  "[-addr ADDR [-token FILE]] OLD NEW",
		short: "rename a file of the tree over 9P",
		long: `Rename OLD to NEW within its directory (9P renames with a wstat of the
name, so both must be in the same directory). NEW may also be just a name.`,
		flags: func(fs *flag.FlagSet) { mvFlags.declare(fs) },
		run:   runMv,
	})
}

func runMv(ctx context.Context, env *Env, args []string) error {
	if len(args) != 2 {
		return usagef("want OLD and NEW")
	}
	fsys, err := mvFlags.dial(ctx, env)
	if err != nil {
		return err
	}
	defer fsys.Close()
	oldp, newp := treePath(args[0]), args[1]
	if !containsSlash(newp) {
		newp = path.Join(path.Dir(oldp), newp)
	}
	newp = treePath(newp)
	if path.Dir(oldp) != path.Dir(newp) {
		return &cliError{fmt.Sprintf("%s and %s are in different directories; 9P renames only within one", args[0], args[1])}
	}
	if err := fsys.Rename(ctx, oldp, newp); err != nil {
		return fmt.Errorf("%s: %v", args[0], err)
	}
	return nil
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}
