package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"errors"
	"ollie.dev/ollie/internal/execute"
)

// execFlags are the flags of `ollie exec`, bound in flags and read in run.
var execFlags struct {
	policy, cwd, tmp, tools, ask string
	timeout                      time.Duration
}

func init() {
	f := &execFlags
	register(&command{
		name:  "exec",
		args:  "[-policy P] [-cwd DIR] [-tmp DIR] [-tools DIR] [-ask DIR] [-timeout D] < args.json",
		short: "run execute_code arguments in the sandbox and print the result",
		long: `Exec reads the arguments of one execute_code call (JSON, as the model
would send them) from standard input, runs the pipeline under the sandbox
profile named by -policy, and prints what the model would read. The exit
status is 1 when a stage failed. Elevated stages are asked for in the
-ask directory: a file appears there; write allow or deny into it.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&f.policy, "policy", "", "sandbox `profile` (default: the configured default)")
			fs.StringVar(&f.cwd, "cwd", "", "working `directory` (default: the current one)")
			fs.StringVar(&f.tmp, "tmp", "", "scratch `directory` (default: tmp/ in ollie's data directory)")
			fs.StringVar(&f.tools, "tools", "", "named tools `directory` (default: t/ in ollie's configuration)")
			fs.StringVar(&f.ask, "ask", "", "ask for consent to elevated stages through files in `directory`")
			fs.DurationVar(&f.timeout, "timeout", 0, "default time for the call when the arguments give none")
		},
		run: runExec,
	})
}

func runExec(ctx context.Context, env *Env, args []string) error {
	f := &execFlags
	if len(args) > 0 {
		return usagef("unexpected arguments")
	}
	c := env.Config
	sb := c.Sandbox
	if f.timeout > 0 {
		sb.Timeout = int((f.timeout + time.Second - 1) / time.Second)
		sb.MaxTimeout = max(sb.MaxTimeout, sb.Timeout)
	}
	spec := execute.Spec{Cwd: f.cwd, Tmp: f.tmp, Tools: f.tools, Policy: f.policy, Session: "ollie exec"}
	if spec.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		spec.Cwd = wd
	}
	if spec.Tmp == "" {
		spec.Tmp = filepath.Join(c.DataDir, "tmp")
		if err := os.MkdirAll(spec.Tmp, 0o700); err != nil {
			return err
		}
	}
	if t := filepath.Join(c.ConfigDir, "t"); spec.Tools == "" && dirExists(t) {
		spec.Tools = t
	}
	if f.ask != "" {
		// A stage must not be able to answer its own request.
		if insideAny(f.ask, spec.Cwd, spec.Tmp) {
			return usagef("-ask %s is inside the sandbox's cwd or tmp, where a stage could answer itself", f.ask)
		}
		spec.Consent = &execute.DirConsent{Dir: f.ask, Timeout: time.Duration(sb.ConsentTimeout) * time.Second}
	}
	ex, err := execute.New(execute.Options{
		Exe:     env.Argv0,
		Sandbox: sb,
		Home:    os.Getenv("HOME"),
		Private: execute.PrivatePaths(c),
		Environ: os.Environ(),
		Ports:   execute.StagePorts(c),
	})
	if err != nil {
		return err
	}
	in, err := io.ReadAll(env.Stdin)
	if err != nil {
		return err
	}
	res, err := ex.Run(ctx, spec, in)
	if res != nil {
		io.WriteString(env.Stdout, res.String())
	}
	if err != nil {
		return err
	}
	if res.Failed {
		return errors.New("stage " + res.Stage + " failed")
	}
	return nil
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// insideAny reports whether path is one of dirs or beneath one, after
// resolving symbolic links.
func insideAny(path string, dirs ...string) bool {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	path = real(path)
	for _, d := range dirs {
		d = real(d)
		if path == d || strings.HasPrefix(path, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
