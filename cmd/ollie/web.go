package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/dial"
)

// webFlags: -addr is where the page is served (as the issue and the
// docs name it); the daemon is -daemon, which the other verbs call -addr.
var webFlags struct {
	daemon addrFlag
	listen string
}

func init() {
	register(&command{
		name:  "web",
		args:  "[-addr 127.0.0.1:PORT] [-daemon ADDR [-token FILE]]",
		short: "serve a browser front-end over the tree",
		long: `Serve a page for the daemon's sessions: the list, chats streaming live,
the prompt box, Stop, Queue and Compact, consent requests, the editable
files of m/ sk/ t/ a/, search across chats, and a timeline of turns. It
is one more 9P client of the daemon (the local one, or -daemon), doing the
same file I/O a shell does.

It listens on loopback only (port 0 picks a free one) and prints the
URL to open on its first line: it carries a token made fresh at every
start, which the page keeps in a cookie, and a secret path the page and
the cookie live under (cookies do not tell ports apart). A request
without the cookie gets 401, one outside the path 404.
'ollie start' starts it too when ollie.json has "web": "127.0.0.1:PORT"
(the URL is then in ollie.log). It is the program ollie-web, installed
beside ollie (./run.sh builds it). See docs/web.md.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&webFlags.listen, "addr", "127.0.0.1:0", "serve the page on `HOST:PORT` (loopback only; port 0 picks one)")
			fs.StringVar(&webFlags.daemon.addr, "daemon", "", dial.AddrUsage)
			declareToken(fs, &webFlags.daemon.token)
		},
		run: runWeb,
	})
}

// webName is the front-end's binary, beside ollie (cmd/ollie-web).
const webName = "ollie-web"

// runWeb checks the flags and becomes ollie-web: the process, its pid
// (which ollie start and ollie stop know) and its standard files are the
// same, only the program changes.
func runWeb(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if err := config.CheckListen(webFlags.listen); err != nil {
		return usagef("-addr: %v", err)
	}
	args = []string{"-addr", webFlags.listen}
	if webFlags.daemon.addr != "" {
		args = append(args, "-daemon", webFlags.daemon.addr)
	}
	if webFlags.daemon.token != "" {
		args = append(args, "-token", webFlags.daemon.token)
	}
	return become(env, webName, args)
}

// become execs program, installed beside ollie, with args after the
// configuration file ollie read: the process, its pid and its standard
// files stay the same, only the program changes. A program that is
// missing is an error that says how to build it.
func become(env *Env, program string, args []string) error {
	dir := filepath.Dir(env.Argv0)
	exe := filepath.Join(dir, program)
	if _, err := os.Stat(exe); err != nil {
		return fmt.Errorf("%s is not installed beside %s: build it, with ./run.sh or go build -o %s ./cmd/%s",
			program, env.Argv0, dir, program)
	}
	argv := []string{program}
	if env.Config.File != "" {
		argv = append(argv, "-config", env.Config.File)
	}
	return syscall.Exec(exe, append(argv, args...), os.Environ())
}
