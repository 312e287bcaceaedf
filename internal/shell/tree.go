package shell

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tree is the mounted ollie tree, reached by plain file I/O like any
// other client: nothing here speaks 9P.
type tree struct{ root string }

// openTree checks that root holds a live ollie tree and says what to do
// when it does not.
func openTree(root string) (*tree, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return nil, fmt.Errorf("the tree at %s is gone (did the daemon die?): ollie start", abs)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no ollie tree at %s: is the daemon running? (ollie start, or -mount DIR)", abs)
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, fmt.Errorf("no ollie tree at %s: not a directory", abs)
	}
	if _, err := os.Stat(filepath.Join(abs, "s", "new")); err != nil {
		if errors.Is(err, syscall.ENOTCONN) {
			return nil, fmt.Errorf("the tree at %s is gone (did the daemon die?): ollie start", abs)
		}
		return nil, fmt.Errorf("nothing is mounted on %s: is the daemon running? (ollie start)", abs)
	}
	return &tree{root: abs}, nil
}

func (t *tree) path(elem ...string) string {
	return filepath.Join(append([]string{t.root}, elem...)...)
}

// read returns a file's content.
func (t *tree) read(elem ...string) (string, error) {
	b, err := os.ReadFile(t.path(elem...))
	return string(b), treeErr(err)
}

// write sends text to a file as one message: in writes of whole 64 KiB
// pieces (so the daemon joins them) and an fsync, which submits it. The
// message has taken effect, or failed, when write returns.
func (t *tree) write(text string, elem ...string) error {
	f, err := os.OpenFile(t.path(elem...), os.O_WRONLY, 0)
	if err != nil {
		return treeErr(err)
	}
	b := []byte(text)
	for len(b) > 0 && err == nil {
		n := min(len(b), 64<<10)
		_, err = f.Write(b[:n])
		b = b[n:]
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return treeErr(err)
}

// treeErr says what an error from the mount means. Through FUSE only an
// errno comes back; the daemon's log has the full text.
func treeErr(err error) error {
	var pe *fs.PathError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("the daemon is not answering (ollie start): %v", err)
	case errors.Is(err, syscall.EINVAL) && errors.As(err, &pe):
		return fmt.Errorf("%s %s: refused (the daemon's log says why)", pe.Op, pe.Path)
	}
	return err
}

// newSession makes a session through the clone file s/new: write the
// settings, read the id back on the same open.
func (t *tree) newSession(cwd, model, backend string) (string, error) {
	f, err := os.OpenFile(t.path("s", "new"), os.O_RDWR, 0)
	if err != nil {
		return "", treeErr(err)
	}
	defer f.Close()
	spec := fmt.Sprintf("cwd=%s\nmodel=%s\nbackend=%s\n", cwd, model, backend)
	if _, err := f.Write([]byte(spec)); err != nil {
		return "", fmt.Errorf("s/new refused the session (the daemon's log says why): %v", errors.Unwrap(err))
	}
	id, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return "", treeErr(err)
	}
	return strings.TrimSpace(id), nil
}

// An entry is one line of s/idx.
type entry struct {
	id, state, agent, backend, model, cwd, name string
}

func (t *tree) sessions() ([]entry, error) {
	text, err := t.read("s", "idx")
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, line := range strings.Split(text, "\n") {
		// id state agent backend model cwd name: the cwd may hold a tab,
		// a name never does.
		f := strings.SplitN(line, "\t", 6)
		if len(f) == 6 {
			e := entry{f[0], f[1], f[2], f[3], f[4], f[5], ""}
			if i := strings.LastIndexByte(e.cwd, '\t'); i >= 0 {
				e.cwd, e.name = e.cwd[:i], e.cwd[i+1:]
				if e.name == "-" {
					e.name = ""
				}
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// lastIn returns the newest session working in cwd, or "".
func (t *tree) lastIn(cwd string) (string, error) {
	es, err := t.sessions()
	if err != nil {
		return "", err
	}
	id := ""
	for _, e := range es { // oldest first
		if e.cwd == cwd {
			id = e.id
		}
	}
	return id, nil
}

// resolve finds a session by id, name, path, or the end of its id.
func (t *tree) resolve(key string) (string, error) {
	key = filepath.Base(strings.TrimSuffix(key, "/"))
	if key == "" || key == "." || key == ".." || key == "new" || key == "idx" {
		return "", fmt.Errorf("no session %q", key)
	}
	if _, err := os.Stat(t.path("s", key, "ctl")); err == nil {
		return key, nil
	}
	es, err := t.sessions()
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range es {
		if strings.HasSuffix(e.id, key) {
			found = append(found, e.id)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no session %q", key)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%q names %d sessions; give more of the id", key, len(found))
}

// kv parses key=value lines (cfg, usage-like files use "key value").
func kv(text, sep string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, sep); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}
