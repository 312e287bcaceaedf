// Package mcpcli is the MCP bridge's command line, the program ollie-mcp
// (`ollie mcp` becomes it): requests to one MCP server, a proxy that
// serves one again over streamable HTTP, and ollie itself as an MCP
// server. mcpconf holds its flags and help; mcpbridge does the MCP.
package mcpcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/mcpconf"
)

// cli is one run: its flags, the configuration and the standard files.
type cli struct {
	mcpconf.Flags
	cfg       *config.Config
	tokenFile string // $OLLIE_TOKEN_FILE, read once here
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
}

// usageError is a mistake on the command line: it is printed with the
// usage, and the exit status is 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Main runs the bridge with args (the program's name left out) and
// returns its exit status: 2 for a mistake on the command line, 130 when
// interrupted, 1 for any other failure. Messages are "ollie mcp: ...",
// as users call it.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ollie mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, tokenFile: os.Getenv("OLLIE_TOKEN_FILE")}
	cfgFile := fs.String("config", "", "read configuration from `FILE` instead of $XDG_CONFIG_HOME/ollie/ollie.json")
	c.Declare(fs)
	fs.Usage = func() { Usage(stderr, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := config.Load(config.OSEnv(), *cfgFile)
	if err != nil {
		fmt.Fprintf(stderr, "ollie mcp: %v\n", err)
		return 1
	}
	c.cfg = cfg
	err = c.run(ctx, fs.Args())
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ollie mcp: %s\n", ue.msg)
		Usage(stderr, fs)
		return 2
	}
	fmt.Fprintf(stderr, "ollie mcp: %v\n", err)
	if errs.Is(err, errs.Interrupted) {
		return 130
	}
	return 1
}

// Usage prints the synopsis, the help and the flags of fs.
func Usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: ollie mcp %s\n\n%s\n\nFlags:\n", mcpconf.Synopsis, strings.TrimSpace(mcpconf.Long))
	fs.PrintDefaults()
}
