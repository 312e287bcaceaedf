// Command ollie is an LLM agent runtime whose whole interface is a file
// tree. See `ollie help` and the README.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// A command is one subcommand. Each lives in its own file and registers
// itself in init, so adding a verb never edits this file.
type command struct {
	name  string
	args  string // synopsis of the arguments, e.g. "[-mount DIR]"
	short string // one line for the command list
	long  string // paragraph shown by `ollie help NAME`
	// flags declares the command's flags on fs; it may be nil.
	flags func(fs *flag.FlagSet)
	// run executes the command. env carries the configuration and I/O.
	run func(ctx context.Context, env *Env, args []string) error
	// noConfig commands run without loading the configuration.
	noConfig bool
	// hidden commands (internal helpers such as the sandbox re-exec) are
	// left out of the command list.
	hidden bool
	// raw commands get their arguments as given, flags and all: another
	// program parses them (ollie mcp becomes ollie-mcp), and flags only
	// documents them for 'ollie help'.
	raw bool
	// interactive commands handle Ctrl-C themselves (ollie sh: it stops
	// a turn, not the shell); only SIGTERM cancels their context.
	interactive bool
}

var commands = map[string]*command{}

func register(c *command) {
	if commands[c.name] != nil {
		panic("duplicate command " + c.name)
	}
	commands[c.name] = c
}

// Env is what a command may use: the configuration, read once here, and
// the process's standard files.
type Env struct {
	Config *config.Config
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Argv0  string // path of this executable, for re-exec
	// TokenFile is $OLLIE_TOKEN_FILE: the token a client presents to a
	// daemon over TCP, when no -token flag names one.
	TokenFile string
}

// usageError marks a command-line mistake: exit status 2 and a usage hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitCode ends a command with a status and no further message (the
// command has already said what it had to).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Main runs ollie with args and returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("ollie", flag.ContinueOnError)
	global.SetOutput(stderr)
	cfgFile := global.String("config", "", "read configuration from `FILE` instead of $XDG_CONFIG_HOME/ollie/ollie.json")
	global.Usage = func() { topUsage(stderr) }
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	args = global.Args()
	if len(args) == 0 {
		topUsage(stderr)
		return 2
	}
	name := args[0]
	cmd := commands[name]
	if cmd == nil {
		fmt.Fprintf(stderr, "ollie: unknown command %q\nRun 'ollie help' for the list of commands.\n", name)
		return 2
	}
	fs := flag.NewFlagSet("ollie "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { commandUsage(stderr, cmd, fs) }
	rest := args[1:]
	if !cmd.raw {
		if cmd.flags != nil {
			cmd.flags(fs)
		}
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		rest = fs.Args()
	}
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, TokenFile: os.Getenv("OLLIE_TOKEN_FILE")}
	if exe, err := os.Executable(); err == nil {
		env.Argv0 = exe
	}
	if !cmd.noConfig {
		c, err := config.Load(config.OSEnv(), *cfgFile)
		if err != nil {
			fmt.Fprintf(stderr, "ollie: %v\n", err)
			return 1
		}
		env.Config = c
	}
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if cmd.interactive {
		sigs = sigs[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	err := cmd.run(ctx, env, rest)
	return exitStatus(stderr, name, err, func() { commandUsage(stderr, cmd, fs) })
}

func exitStatus(stderr io.Writer, name string, err error, usage func()) int {
	if err == nil {
		return 0
	}
	var ec exitCode
	if errors.As(err, &ec) {
		return int(ec)
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "ollie %s: %s\n", name, ue.msg)
		usage()
		return 2
	}
	fmt.Fprintf(stderr, "ollie %s: %v\n", name, err)
	if errs.Is(err, errs.Interrupted) {
		return 130
	}
	return 1
}

func topUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: ollie [-config FILE] COMMAND [ARGS]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if c.hidden {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].short)
	}
	fmt.Fprintf(w, "\nRun 'ollie help COMMAND' for details of one command.\n")
}

func commandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: ollie %s %s\n", c.name, c.args)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.long))
	}
	if fs != nil {
		has := false
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprintf(w, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
}

func init() {
	register(&command{
		name:     "help",
		args:     "[COMMAND]",
		short:    "show the commands, or the details of one",
		noConfig: true,
		run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) == 0 {
				topUsage(env.Stdout)
				return nil
			}
			c := commands[args[0]]
			if c == nil {
				return usagef("unknown command %q", args[0])
			}
			fs := flag.NewFlagSet("ollie "+c.name, flag.ContinueOnError)
			fs.SetOutput(env.Stdout)
			if c.flags != nil {
				c.flags(fs)
			}
			commandUsage(env.Stdout, c, fs)
			return nil
		},
	})
}
