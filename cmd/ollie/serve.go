package main

import (
	"context"
	"flag"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ollie.dev/ollie/internal/agent"
	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/execute"
	"ollie.dev/ollie/internal/idle"
	"ollie.dev/ollie/internal/mcplive"
	"ollie.dev/ollie/internal/ninep"
	"ollie.dev/ollie/internal/redact"
	"ollie.dev/ollie/internal/sandbox"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/trim"
)

// serverFlags are the flags serve and start share; they override the
// config file.
type serverFlags struct {
	socket string
	listen string
	mount  string
	nomnt  bool
}

func (f *serverFlags) declare(fs *flag.FlagSet, mountDoc string) {
	fs.StringVar(&f.socket, "socket", "", "serve on the unix socket `PATH` (default $XDG_RUNTIME_DIR/ollie/ollie.sock)")
	fs.StringVar(&f.listen, "listen", "", "also serve 9P on TCP `ADDR`, inside TLS and only to clients with the token (docs/remote.md)")
	fs.StringVar(&f.mount, "mount", "", mountDoc)
}

func (f *serverFlags) apply(c *config.Config) error {
	if f.socket != "" {
		c.Socket = absPath(f.socket)
	}
	if f.listen != "" {
		if err := config.CheckListen9P(f.listen); err != nil {
			return usagef("-listen: %v", err)
		}
		c.Listen = f.listen
	}
	return nil
}

func absPath(p string) string {
	if a, err := absolute(p); err == nil {
		return a
	}
	return p
}

var serveFlags serverFlags

// serveProfiles are serve's opt-in profiles, written to files the user
// names: nothing listens, so no stage can reach them.
var serveProfiles struct{ cpu, mem, block, mutex string }

func init() {
	register(&command{
		name:  "serve",
		args:  "[-socket PATH] [-listen ADDR] [-mount DIR] [-cpuprofile FILE] [-memprofile FILE] [-blockprofile FILE] [-mutexprofile FILE]",
		short: "run the daemon in the foreground",
		long: `Serve the ollie tree over 9P on a unix socket (mode 0600 in a 0700
directory) until interrupted. With -listen (or listen in ollie.json), also
on TCP, always inside TLS and only to clients that present the daemon's
token (docs/remote.md). With -mount, also mount the tree at DIR through
FUSE in the same process; it is unmounted on exit. -cpuprofile,
-memprofile, -blockprofile and -mutexprofile write pprof profiles of the
daemon to files when it stops, for docs/bench.md.`,
		flags: func(fs *flag.FlagSet) {
			serveFlags.declare(fs, "also mount the tree at `DIR` through FUSE")
			fs.StringVar(&serveProfiles.cpu, "cpuprofile", "", "write a CPU profile of the daemon to `FILE` until it stops")
			fs.StringVar(&serveProfiles.mem, "memprofile", "", "write the daemon's heap profile (allocations included) to `FILE` when it stops")
			fs.StringVar(&serveProfiles.block, "blockprofile", "", "write the daemon's blocking profile to `FILE` when it stops")
			fs.StringVar(&serveProfiles.mutex, "mutexprofile", "", "write the daemon's mutex contention profile to `FILE` when it stops")
		},
		run: runServe,
	})
}

// trimAfter is how long after start, at the soonest, the daemon gives
// back the memory of its start-up (internal/trim): then, or once it has a
// moment after that. The idle rows of ollie bench wait for it.
const trimAfter = time.Second

func runServe(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if err := serveFlags.apply(env.Config); err != nil {
		return err
	}
	stopProfiles, err := startProfiles(serveProfiles.cpu, serveProfiles.mem, serveProfiles.block, serveProfiles.mutex)
	if err != nil {
		return err
	}
	defer stopProfiles()
	// One redactor, from the configuration, for everything the daemon
	// writes: its log, the backends' errors, the tree.
	var extra []string
	if env.Config.Listen != "" {
		// The 9P token is a secret too; the daemon would make it at
		// start, so it is made here, to be known to the redactor.
		if _, err := ninep.LoadOrCreateToken(env.Config.TokenFile()); err != nil {
			return err
		}
		if b, err := os.ReadFile(env.Config.TokenFile()); err == nil {
			extra = append(extra, strings.TrimSpace(string(b)))
		}
	}
	rd := redact.FromConfig(env.Config, extra...)
	logger := log.New(rd.Writer(env.Stderr), "ollie: ", log.LstdFlags)
	log.SetOutput(rd.Writer(log.Writer())) // the few log.Printf of the tree layers
	mnt := ""
	if serveFlags.mount != "" {
		mnt = absPath(serveFlags.mount)
	}
	runner, err := agent.FromConfig(env.Config, env.Argv0, mnt, logger.Printf, rd)
	if err != nil {
		return err
	}
	live := mcplive.New(mcplive.Options{Start: runner.StartMCP, Spec: runner.StageSpec,
		Servers: filepath.Join(env.Config.ConfigDir, "t", "mcp.d", "servers.json"), Logf: logger.Printf})
	d, err := daemon.Start(env.Config, daemon.Options{Log: logger, Runner: runner, CheckAgent: runner.CheckAgent, Models: runner.Models, Redact: rd, BackendState: runner.BackendState, InUse: runner.InUse, SystemPrompt: runner.SystemPrompt, MCP: live})
	if err != nil {
		return err
	}
	for _, a := range d.Addrs() {
		logger.Printf("serving 9P on %s!%s (pid %d)", a.Network(), a.String(), os.Getpid())
	}
	if mnt != "" {
		stop, err := mountInProcess(ctx, env, mnt, env.Config.Socket)
		if err != nil {
			d.Close()
			return err
		}
		d.BeforeClose(stop)
		logger.Printf("mounted on %s", mnt)
	}
	// Handlers run last registered first: the sandbox's resident helper
	// and the mount namespaces it keeps, which hold copies of the mount,
	// go before the unmount that would wait for them.
	d.BeforeClose(sandbox.Stop)
	// Warming, in the background. What the first requests of a script
	// that just started ollie need goes at once, in one goroutine: the
	// paths a new session's cwd is kept away from and the t/ and sk/
	// indexes every system prompt shows (the first s/new checks one and
	// renders the other), then the model and context window of the default
	// agent's backend (the first turn asks them first), which is mostly
	// waiting for that server. The rest waits until the daemon has a
	// moment (internal/idle), so as not to take the processors from
	// those requests; nothing in it is needed to answer, and each piece
	// is done by the first request that needs it if it comes first:
	//  - the part of the default profile's policy that is the same for
	//    every session (the system carved around secrets, 2 to 3 ms),
	//    which the sandbox then keeps fresh while it is used;
	//  - the stages' cgroups and the resident sandbox helper, with
	//    threads ready for the default profile's stages.
	// A moment after start, what only start-up needed goes back to the
	// system: its forced collection and its walk of the mappings took
	// some 10 ms of CPU from the first answer when done at once. First,
	// the default profile's system paths are opened and held for the
	// rulesets of new sessions (internal/sandbox/heldpaths.go), which
	// once waited for the kernel in the first stage of the daemon, and
	// the port guard is set up, which that stage also did.
	go func() {
		d.WarmCwdCheck()
		runner.Warm()
		runner.WarmBackend(ctx, session.DefaultAgent)
	}()
	helper := sandbox.HelperFor(env.Argv0)
	if helper == env.Argv0 {
		logger.Printf("no %s beside %s: ollie is its own sandbox helper, which takes more memory and time to start",
			sandbox.HelperName, env.Argv0)
	}
	var work []func()
	var warm []config.Profile
	hold := func() {}
	if p, err := env.Config.Sandbox.Profile(env.Config.Sandbox.Default); err == nil {
		warm = append(warm, p)
		home, _ := os.UserHomeDir() // as agent.FromConfig gives the executor
		private := execute.PrivatePaths(env.Config)
		work = append(work, func() { sandbox.WarmBase(p, home, private) })
		hold = func() {
			sandbox.HoldBase(p, home, private)
			sandbox.WarmGuard(execute.StagePorts(env.Config))
		}
	}
	work = append(work, func() { sandbox.Warm(helper, logger.Printf, warm...) },
		idle.Until(ctx, d.Start.Add(trimAfter)), hold, trim.Executable)
	idle.Later(ctx, work...)
	// And what requests bring in, once they stop.
	go trim.WhenIdle(ctx, d.Server.Stats.TotalOps)
	err = d.Run(ctx)
	logger.Printf("stopped")
	return err
}
