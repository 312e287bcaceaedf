// Package sandbox confines the processes execute_code starts.
//
// A profile from the configuration (config.Profile), applied to one
// session's paths, gives a Policy: lists of paths to allow, network rules,
// socket families to refuse and resource limits. Landlock is allow-list
// only, so "read the system but not the secrets" is built by carving: the
// root's entries are allowed one by one except the hidden ones, recursing
// only into directories that contain something hidden (see carve.go).
//
// The daemon turns a Policy into a Landlock ruleset (Prepare) and starts
// each process (Prepared.Start) through ollie's own helper, which applies
// no-new-privs, the Landlock ruleset, a seccomp filter and an empty
// capability set, all of them per thread, then execs the program. The
// helper is resident (serve.go): ollie re-executed once as the hidden
// command "sandbox-exec -serve", which confines a fresh thread for each
// program and forks it from there, as a child of the daemon. Resource
// limits and the program's own process group, which are per process, are
// applied by the daemon while the child is stopped at a seccomp gate
// before its exec (gate.go). The one-shot helper, "sandbox-exec -- SPEC
// ...", confines its own process and execs the program in its place; it
// starts elevated programs and takes over when the resident helper cannot
// (HelperMain serves both).
//
// The seccomp filter refuses setsid and setpgid, so every process of a
// stage stays in the process group the daemon created for it and dies
// with it: a double fork cannot outlive its stage. It also refuses unix
// sockets (which reach past Landlock before ABI 9), keyrings and io_uring.
//
// Inside the writable roots, .git and ollie's own directories stay
// read-only: Landlock cannot carve them out, so such a stage runs in a
// mount namespace of its own where they are bound read-only (protect.go,
// nscache.go).
//
// What Landlock itself cannot hide is reached through /proc: the pid
// directories of other processes are left out of every policy, because
// Landlock's ptrace rule does not cover /proc/PID/environ (checked on
// kernel 6.18), and the environment of the daemon holds its API keys.
// /proc/self still works through magic links (/dev/stdout, /dev/fd/N),
// whose targets Landlock judges on their own.
package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// Paths are the places a policy is about. All must be absolute.
type Paths struct {
	Home  string // the user's home directory: hidden unless the profile reads it
	Cwd   string // the session's working directory
	Tmp   string // the session's scratch directory: always read-write
	Tools string // the named tools (t/): read and execute; "" for none
	// Private are ollie's own directories and files (configuration,
	// data, state, runtime, mount point): never part of what is read.
	Private []string
	// Programs are the directories of ollie's executables (ollie,
	// ollie-sandbox, ollie-web): readable, but kept read-only inside a
	// writable root like .git, since the daemon runs what they hold
	// unconfined (a stage that planted an ollie-sandbox there would be
	// the next helper).
	Programs []string
}

// Policy is a profile applied to one session's paths: what the helper
// enforces on a stage.
type Policy struct {
	Name    string
	RODirs  []string // read and execute beneath
	ROFiles []string
	RWDirs  []string // read, write, execute beneath
	RWFiles []string
	Net     Net
	// DenyFamilies are the socket address families seccomp refuses.
	DenyFamilies []int
	Limits       config.Limits
	// Protect are paths inside RWDirs that stay read-only (protect.go);
	// Reopen are RWDirs inside those, writable again.
	Protect, Reopen []string
	nsKey           string // see nsKey
	// Guard are the ports kept from every stage whatever the profile
	// (netguard.go); the caller sets it from config.Config.StagePorts.
	Guard Guard
}

// Net is what a policy allows of TCP. With Restrict false the network is
// left alone; with it set only the listed ports work.
type Net struct {
	Restrict bool
	Connect  []uint16
	Bind     []uint16
	// BindOnly restricts binding alone, to Bind; connecting is left alone.
	BindOnly bool
}

// devFiles are the device files a stage may read and write; the rest of
// /dev stays out, since for root it holds the raw disks.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// New applies profile p, called name, to paths.
func New(name string, p config.Profile, paths Paths) (*Policy, error) {
	b, err := cachedBase(p, paths)
	if err != nil {
		return nil, err
	}
	if err := checkPaths(&paths, b); err != nil {
		return nil, err
	}
	pol := &Policy{Name: name, Limits: p.Limits}
	pol.RODirs = append(pol.RODirs, b.dirs...)
	pol.ROFiles = append(pol.ROFiles, b.files...)
	if p.System {
		pol.RWFiles = append(pol.RWFiles, devFiles...)
	}
	switch p.Cwd {
	case config.AccessRW:
		pol.RWDirs = append(pol.RWDirs, paths.Cwd)
	case config.AccessRO:
		pol.RODirs = append(pol.RODirs, paths.Cwd)
	}
	pol.RWDirs = append(pol.RWDirs, paths.Tmp)
	if paths.Tools != "" {
		pol.RODirs = append(pol.RODirs, paths.Tools)
	}
	if err := pol.addListed(p, paths.Home); err != nil {
		return nil, err
	}
	pol.Net, pol.DenyFamilies = netPolicy(p)
	if p.Protects() {
		pol.Protect, pol.Reopen = protectedPaths(pol.RWDirs, slices.Concat(b.private, resolveAll(paths.Programs)))
		if len(pol.Protect) > 0 {
			pol.nsKey = nsKey(pol.Protect, pol.Reopen, pol.RWDirs)
		}
	}
	return pol, nil
}

// addListed adds the profile's own read and write lists; they are the
// user's explicit choice and may reach anywhere.
func (pol *Policy) addListed(p config.Profile, home string) error {
	for _, l := range []struct {
		paths      []string
		dirs, file *[]string
	}{{p.Read, &pol.RODirs, &pol.ROFiles}, {p.Write, &pol.RWDirs, &pol.RWFiles}} {
		for _, path := range l.paths {
			path = expand(path, home)
			fi, err := os.Stat(path)
			if err != nil {
				continue // a missing optional path grants nothing
			}
			if fi.IsDir() {
				*l.dirs = append(*l.dirs, path)
			} else {
				*l.file = append(*l.file, path)
			}
		}
	}
	return nil
}

func expand(path, home string) string {
	if strings.HasPrefix(path, "~/") && home != "" {
		return filepath.Join(home, path[2:])
	}
	return filepath.Clean(path)
}

// checkPaths resolves symbolic links in the session's directories and
// refuses those that would expose a secret: a working directory of $HOME
// or / would otherwise grant ~/.ssh along with it.
func checkPaths(p *Paths, b *base) error {
	for _, d := range []struct {
		what string
		path *string
	}{{"cwd", &p.Cwd}, {"tmp", &p.Tmp}, {"tools", &p.Tools}} {
		if *d.path == "" && d.what == "tools" {
			continue
		}
		if !filepath.IsAbs(*d.path) {
			return errs.E(errs.Invalid, d.what+" "+*d.path+" is not an absolute path")
		}
		real, err := filepath.EvalSymlinks(*d.path)
		if err != nil {
			return errs.E(errs.NotExist, d.what+" "+*d.path, err)
		}
		*d.path = real
		// b is shared by concurrent calls: never append to its slices.
		for _, s := range slices.Concat(b.secrets, b.private) {
			if within(s, real) {
				return errs.E(errs.Permission, d.what+" "+real+" contains protected "+s)
			}
		}
		for _, s := range b.secrets {
			if within(real, s) {
				return errs.E(errs.Permission, d.what+" "+real+" is inside protected "+s)
			}
		}
	}
	return nil
}

// within reports whether path is dir or beneath it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// resolve follows symbolic links where the path exists, since Landlock
// rules attach to the real directories.
// resolveAll is resolve of each of paths.
func resolveAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = resolve(p)
	}
	return out
}

func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}
