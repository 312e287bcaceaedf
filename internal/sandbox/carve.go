package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
)

// systemHidden are the parts of the file system that "read the system"
// leaves out: homes, shared scratch space (other programs' sockets and
// temporary files), devices (raw disks), per-user runtime directories and
// container secrets. /proc is handled by procEntries.
var systemHidden = []string{
	"/home", "/root", "/tmp", "/var/tmp", "/dev", "/proc", "/run/user", "/run/secrets",
	"/var/run/user", "/lost+found",
}

// systemSecrets are files only root can read; they matter when the daemon
// runs as root, where nothing but Landlock stands in the way.
var systemSecrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
	"/etc/sudoers.d", "/etc/security/opasswd", "/etc/ssh/ssh_host_*key*", "/var/lib/sss",
}

// homeSecrets are credentials kept in a home directory, relative to it.
var homeSecrets = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub",
	".config/op", ".netrc", ".docker", ".kube", ".password-store", ".git-credentials",
	".npmrc", ".pypirc", ".gem/credentials", ".cargo/credentials", ".cargo/credentials.toml",
	".vault-token", ".terraform.d", ".local/share/keyrings", ".pki", ".mozilla",
	".config/google-chrome", ".config/chromium", ".m2/settings.xml", ".gradle/gradle.properties",
}

// procHidden are /proc entries that are not per-process but still say too
// much or do too much.
var procHidden = map[string]bool{
	"kcore": true, "kmsg": true, "keys": true, "key-users": true, "kpagecount": true,
	"kpageflags": true, "kpagecgroup": true, "sysrq-trigger": true, "timer_list": true,
}

// secretPaths are the paths no session directory may contain or lie in.
func secretPaths(home string) []string {
	var s []string
	if home != "" {
		for _, h := range homeSecrets {
			s = append(s, filepath.Join(home, h))
		}
	}
	return append(s, systemSecrets...)
}

// hiddenPaths is everything carve must leave out for profile p.
func hiddenPaths(p config.Profile, paths Paths) []string {
	h := append([]string{}, systemHidden...)
	h = append(h, secretPaths(paths.Home)...)
	h = append(h, paths.Private...)
	if !p.Home && paths.Home != "" {
		h = append(h, paths.Home)
	}
	for _, x := range p.Hide {
		h = append(h, expand(x, paths.Home))
	}
	var out []string
	for _, x := range h {
		if m, err := filepath.Glob(x); err == nil && len(m) > 0 {
			for _, y := range m {
				out = append(out, resolve(y))
			}
			continue
		}
		out = append(out, resolve(x))
	}
	sort.Strings(out)
	return out
}

// carve lists the directories and files to allow so that everything
// beneath root is allowed except the hidden paths. Only directories on the
// way to a hidden path are listed; symbolic links are skipped, since
// their targets are allowed or not on their own. Anything created later in
// a listed directory is not allowed: the carve fails closed.
func carve(root string, hidden []string) (dirs, files []string, err error) {
	var walk func(dir string) error
	walk = func(dir string) error {
		cover := false
		for _, h := range hidden {
			if h == dir {
				return nil
			}
			if within(h, dir) {
				cover = true
			}
		}
		if !cover {
			dirs = append(dirs, dir)
			return nil
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			if errs.Is(err, errs.Permission) {
				return nil // unreadable to us, so to the sandbox too
			}
			return err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0:
			case e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case !contains(hidden, p):
				files = append(files, p)
			}
		}
		return nil
	}
	if _, err := os.Stat(root); err != nil {
		return nil, nil, nil
	}
	if err := walk(root); err != nil {
		return nil, nil, errs.E(errs.Other, "sandbox: listing "+root, err)
	}
	return dirs, files, nil
}

func contains(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}

// baseTTL bounds how long a base is reused. Listing / and /etc and
// resolving dozens of paths for every call would cost more than the rest
// of a stage's setup, and the top of a file system changes rarely; what
// appears meanwhile is denied, not allowed.
//
// A base used when older than half of that is made again in the
// background, so that a call in a run of turns does not wait for it (2 to
// 3 ms here); one older than baseTTL is made again by the call that needs
// it. Nothing is made while no stage runs. (A timer once made the base
// again every 30 s for ten minutes after its last use: in an idle daemon
// that paged 3 MB of the executable back in after the start-up trim, its
// PSS 4.9 MB two seconds after start and 8.5 MB a minute later, and woke
// it twice a minute, for what a turn after a pause of a minute then saves.)
const baseTTL = time.Minute

// baseTTLNanos is baseTTL, which tests may shorten.
var baseTTLNanos = durationVar(baseTTL)

func durationVar(d time.Duration) *atomic.Int64 {
	v := new(atomic.Int64)
	v.Store(int64(d))
	return v
}

// A base is the part of a policy that depends on the profile and the
// user but not on the session.
type base struct {
	dirs, files []string // system, /proc and home entries to allow, read-only
	secrets     []string // no session directory may contain or lie in these
	private     []string // no session directory may contain these
	at          time.Time
}

var bases struct {
	mu     sync.Mutex
	m      map[string]*base
	making map[string]bool // made again in the background, now
}

func baseKey(p config.Profile, paths Paths) string {
	return fmt.Sprintf("%v\x00%v\x00%q\x00%q\x00%q", p.System, p.Home, p.Hide, paths.Home, paths.Private)
}

func cachedBase(p config.Profile, paths Paths) (*base, error) {
	key := baseKey(p, paths)
	ttl := time.Duration(baseTTLNanos.Load())
	bases.mu.Lock()
	if b, ok := bases.m[key]; ok && time.Since(b.at) < ttl {
		if time.Since(b.at) >= ttl/2 && !bases.making[key] {
			bases.making[key] = true
			go remakeBase(key, p, paths)
		}
		bases.mu.Unlock()
		return b, nil
	}
	bases.mu.Unlock()
	b, err := newBase(p, paths)
	if err != nil {
		return nil, err
	}
	bases.mu.Lock()
	keepBaseLocked(key, b)
	bases.mu.Unlock()
	return b, nil
}

// remakeBase makes the base of key again, in the background.
func remakeBase(key string, p config.Profile, paths Paths) {
	b, err := newBase(p, paths)
	bases.mu.Lock()
	defer bases.mu.Unlock()
	delete(bases.making, key)
	if err == nil {
		keepBaseLocked(key, b)
	}
}

// keepBaseLocked keeps b as the base of key, unless a newer one is kept.
func keepBaseLocked(key string, b *base) {
	if bases.m == nil {
		bases.m, bases.making = map[string]*base{}, map[string]bool{}
	}
	if old, ok := bases.m[key]; !ok || old.at.Before(b.at) {
		bases.m[key] = b
	}
}

// WarmBase makes the base of profile p for a user whose home is home,
// with ollie's own directories private, so that the first stage of the
// daemon does not wait for it.
func WarmBase(p config.Profile, home string, private []string) {
	cachedBase(p, Paths{Home: home, Private: private})
}

func newBase(p config.Profile, paths Paths) (*base, error) {
	// The same real paths the check of a session's directory uses, from
	// its cache (sessiondir.go).
	pr := protectedFor(paths.Home, paths.Private)
	b := &base{at: time.Now(), secrets: pr.secrets, private: pr.private}
	hidden := hiddenPaths(p, paths)
	var roots []string
	if p.System {
		roots = append(roots, "/")
		d, f, err := procEntries()
		if err != nil {
			return nil, err
		}
		b.dirs, b.files = append(b.dirs, d...), append(b.files, f...)
	}
	if p.Home && paths.Home != "" {
		roots = append(roots, resolve(paths.Home))
	}
	for _, r := range roots {
		d, f, err := carve(r, hidden)
		if err != nil {
			return nil, err
		}
		b.dirs, b.files = append(b.dirs, d...), append(b.files, f...)
	}
	return b, nil
}

// procEntries are the parts of /proc that describe the system rather than
// a process: cpuinfo, meminfo, sys/ and so on. Pid directories are left
// out, as are the "self" links (which lead to them).
func procEntries() (dirs, files []string, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, errs.E(errs.Other, "sandbox: listing /proc", err)
	}
	for _, e := range ents {
		n := e.Name()
		if n[0] >= '0' && n[0] <= '9' || e.Type()&os.ModeSymlink != 0 || procHidden[n] {
			continue
		}
		if e.IsDir() {
			dirs = append(dirs, "/proc/"+n)
		} else {
			files = append(files, "/proc/"+n)
		}
	}
	return dirs, files, nil
}

// netPolicy turns a profile's network settings into Landlock port rules
// and the socket families seccomp refuses.
func netPolicy(p config.Profile) (Net, []int) {
	var deny []int
	if !p.UnixSockets {
		deny = append(deny, syscall.AF_UNIX)
	}
	if !p.Network {
		deny = append(deny, syscall.AF_INET, syscall.AF_INET6, syscall.AF_PACKET)
		return Net{Restrict: true}, deny
	}
	if len(p.TCPConnect) > 0 || len(p.TCPBind) > 0 {
		return Net{Restrict: true, Connect: p.TCPConnect, Bind: p.TCPBind}, deny
	}
	return Net{}, deny
}
