package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/ninep/client"
)

// The reference implementation (lneely's ollie-core and ollie-9p,
// docs/bench.md says how to build its daemon, olliesrv, outside this
// repository) is measured by the same client, over the same kind of
// socket, against the same scripted models. What differs:
//
//   - it serves 9P at $NAMESPACE/ollie, started by `olliesrv fgstart`;
//   - its backends are chosen by kind and configured by environment
//     variables (OLLIE_BACKEND, OLLIE_OLLAMA_URL, OLLIE_OPENAI_URL);
//   - its m/ is ~/.config/ollie/memory;
//   - a prompt write returns before the turn starts, and there is no
//     wait file: a turn ends when statewait, opened before the prompt,
//     says idle; the reply is chat from offset;
//   - s/new is no clone file, nothing reaches the disk (no fsync, no
//     restart), and it mounts only through plan9port's 9pfuse;
//   - execute_code runs stages under landrun, which must be on PATH or
//     beside olliesrv;
//   - its 9P layer logs every request to stdout, which the run sends to
//     /dev/null, as `olliesrv start` does;
//   - it asks before each execute_code unless its agent trusts the tool
//     (the run's agents/default.json does), and needs a landrun profile
//     (the run writes one like ollie's workspace profile).
//
// The rows it has no counterpart for are left empty.

// newRefDaemon lays out a home in dir for the reference daemon.
func newRefDaemon(bin, dir string, env []string, m *Models) (*Daemon, error) {
	home := filepath.Join(dir, "home")
	ns := filepath.Join(dir, "ns")
	d := &Daemon{home: home, sock: filepath.Join(ns, "ollie"), cwd: filepath.Join(dir, "cwd"), seq: new(atomic.Int64), ref: true}
	mem := filepath.Join(home, ".config", "ollie", "memory")
	for _, p := range []string{d.cwd, ns, mem} {
		if err := os.MkdirAll(p, 0700); err != nil {
			return nil, err
		}
	}
	cfg := filepath.Join(home, ".config", "ollie")
	for _, f := range []struct{ path, data string }{
		{filepath.Join(mem, "bench"), benchContent},
		// Its agent asks before every execute_code unless trusted, and
		// its stages run under the landrun profile sandbox/default.yaml.
		{filepath.Join(cfg, "agents", "default.json"), `{"trustedTools":["execute_code"]}`},
		{filepath.Join(cfg, "sandbox", "default.yaml"), refSandbox},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(f.path, []byte(f.data), 0600); err != nil {
			return nil, err
		}
	}
	path := os.Getenv("PATH")
	if lr, err := exec.LookPath("landrun"); err == nil {
		path = filepath.Dir(lr) + ":" + path
	} else if lr := filepath.Join(filepath.Dir(bin), "landrun"); fileExists(lr) {
		path = filepath.Dir(lr) + ":" + path // beside olliesrv
	}
	d.env = append([]string{"HOME=" + home, "NAMESPACE=" + ns, "XDG_RUNTIME_DIR=" + ns, "PATH=" + path,
		"OLLIE_BACKEND=ollama", "OLLIE_OLLAMA_URL=" + m.InstantURL, "OLLIE_OPENAI_URL=http://" + m.Proxy.Addr(), "OLLIE_OPENAI_KEY=bench"}, env...)
	d.argv = []string{bin, "fgstart"}
	// Its 9P layer logs every request at debug level to stdout, which
	// `olliesrv start` leaves on /dev/null.
	d.quiet = true
	return d, nil
}

// refSandbox is the reference's landrun profile for the run: the working
// directory and /tmp writable, the system read-only and executable, no
// network; like ollie's default workspace profile. Best effort: landrun
// as built today asks for Landlock ABI 9 and applies what the kernel has.
const refSandbox = `general:
  best_effort: true
filesystem:
  rwx:
    - "{CWD}"
    - "/tmp"
  rox:
    - "/usr"
    - "/bin"
    - "/lib"
    - "/lib64"
    - "/etc"
  ro:
    - "/proc"
    - "/dev"
env:
  - HOME
  - PATH
  - TMPDIR
network:
  unrestricted: false
`

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// refTurn is a turn of the reference: open statewait (its baseline is
// the state at the open, idle), write the prompt, read statewait until it
// says idle, read the reply from chat at offset.
func refTurn(ctx context.Context, fsys *client.Fsys, id, prompt string) error {
	dir := "s/" + id + "/"
	sw, err := fsys.Open(ctx, dir+"statewait", plan9.OREAD)
	if err != nil {
		return err
	}
	defer sw.Clunk(ctx)
	if err := fsys.WriteFile(ctx, dir+"prompt", []byte(prompt+"\n"), 0); err != nil {
		return err
	}
	buf := make([]byte, 256)
	for {
		n, err := sw.Read(ctx, buf, 0)
		if err != nil {
			return err
		}
		st := strings.TrimSpace(string(buf[:n]))
		if st == "idle" {
			break
		}
		if strings.HasPrefix(st, "error") {
			return fmt.Errorf("turn of %s: %s", id, st)
		}
	}
	b, err := fsys.ReadFile(ctx, dir+"offset")
	if err != nil {
		return err
	}
	off, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("offset of %s: %q", id, b)
	}
	n, err := readThrough(ctx, fsys, dir+"chat", off)
	if err == nil && n == 0 {
		err = fmt.Errorf("turn of %s: no reply after offset %d", id, off)
	}
	return err
}

// refGroups are the groups the reference can be measured in.
var refGroups = []string{"9p", "session", "turn", "fresh", "ingest", "load", "scale"}

// startRef starts the reference's main daemon.
func (r *run) startRef() error {
	bin, err := filepath.Abs(r.o.Ref)
	if err != nil {
		return err
	}
	r.refBin = bin
	r.isRef = true
	defer func() { r.isRef = false }()
	d, err := r.daemon("main")
	if err != nil {
		return err
	}
	r.refMain = d
	return d.Start(r.ctx)
}
