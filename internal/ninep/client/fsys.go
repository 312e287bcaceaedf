package client

import (
	"context"
	"io"
	"net"
	"path"
	"slices"
	"strings"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
)

// DefaultPort is the TCP port of a dial string that names none.
const DefaultPort = "564"

// ParseAddr turns an address into a network and an address for net.Dial.
// It accepts Plan 9 dial strings ("unix!/path", "tcp!host!port",
// "tcp!host"), "host:port" (tcp), and a bare path (unix).
func ParseAddr(addr string) (network, address string) {
	if net, rest, ok := strings.Cut(addr, "!"); ok {
		switch net {
		case "unix":
			return "unix", rest
		case "tcp", "net":
			host, port, ok := strings.Cut(rest, "!")
			if !ok {
				port = DefaultPort
			}
			return "tcp", hostPort(host, port)
		}
	}
	if strings.Contains(addr, "/") {
		return "unix", addr
	}
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return "tcp", addr
	}
	return "unix", addr
}

func hostPort(host, port string) string {
	if host == "*" {
		host = ""
	}
	return net.JoinHostPort(host, port)
}

// Fsys is a convenience for programs that name files by slash-separated
// paths relative to an attached root, as the CLI verbs do.
type Fsys struct {
	Root *Fid
}

// Mount dials addr (any syntax ParseAddr accepts) and attaches to the root
// of aname as uname.
func Mount(ctx context.Context, addr, uname, aname string) (*Fsys, error) {
	c, err := Dial(ctx, "", addr)
	if err != nil {
		return nil, err
	}
	return mount(ctx, c, uname, aname)
}

// mount attaches to the root of aname on c as uname, closing c if it
// cannot.
func mount(ctx context.Context, c *Conn, uname, aname string) (*Fsys, error) {
	root, err := c.Attach(ctx, uname, aname)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Fsys{Root: root}, nil
}

// Close closes the connection.
func (fsys *Fsys) Close() error { return fsys.Root.c.Close() }

// SplitPath splits a slash-separated path into walk names, dropping empty
// and "." elements.
func SplitPath(p string) []string {
	var names []string
	for _, e := range strings.Split(p, "/") {
		if e != "" && e != "." {
			names = append(names, e)
		}
	}
	return names
}

// Walk returns a fid for the file at p.
func (fsys *Fsys) Walk(ctx context.Context, p string) (*Fid, error) {
	return fsys.Root.Walk(ctx, SplitPath(p)...)
}

// Open walks to p and opens it with mode.
func (fsys *Fsys) Open(ctx context.Context, p string, mode uint8) (*Fid, error) {
	f, err := fsys.Walk(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := f.Open(ctx, mode); err != nil {
		f.Clunk(ctx)
		return nil, err
	}
	return f, nil
}

// Create creates the file p, which must not exist, and opens it with mode.
func (fsys *Fsys) Create(ctx context.Context, p string, perm plan9.Perm, mode uint8) (*Fid, error) {
	dir, name := path.Split(path.Clean("/" + p))
	f, err := fsys.Walk(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := f.Create(ctx, name, perm, mode); err != nil {
		f.Clunk(ctx)
		return nil, err
	}
	return f, nil
}

// Stat returns the directory entry of p.
func (fsys *Fsys) Stat(ctx context.Context, p string) (*plan9.Dir, error) {
	f, err := fsys.Walk(ctx, p)
	if err != nil {
		return nil, err
	}
	defer f.Clunk(ctx)
	return f.Stat(ctx)
}

// Wstat changes the metadata of p.
func (fsys *Fsys) Wstat(ctx context.Context, p string, d *plan9.Dir) error {
	f, err := fsys.Walk(ctx, p)
	if err != nil {
		return err
	}
	defer f.Clunk(ctx)
	return f.Wstat(ctx, d)
}

// Remove removes p.
func (fsys *Fsys) Remove(ctx context.Context, p string) error {
	f, err := fsys.Walk(ctx, p)
	if err != nil {
		return err
	}
	return f.Remove(ctx)
}

// Rename renames oldp to newp, which must be in the same directory: 9P
// renames by changing the name in a wstat.
func (fsys *Fsys) Rename(ctx context.Context, oldp, newp string) error {
	odir, _ := path.Split(path.Clean("/" + oldp))
	ndir, nname := path.Split(path.Clean("/" + newp))
	if odir != ndir {
		return errs.E(errs.Unsupported, "rename across directories")
	}
	var d plan9.Dir
	d.Null()
	d.Name = nname
	return fsys.Wstat(ctx, oldp, &d)
}

// ReadDir returns the entries of the directory p.
func (fsys *Fsys) ReadDir(ctx context.Context, p string) ([]*plan9.Dir, error) {
	f, err := fsys.Open(ctx, p, plan9.OREAD)
	if err != nil {
		return nil, err
	}
	defer f.Clunk(ctx)
	return f.DirreadAll(ctx)
}

// firstRead is the room ReadFile gives the first Tread: most files of the
// tree are smaller, and a larger one costs one more round trip.
const firstRead = 8 << 10

// ReadFile reads p to its end. The data are read into the slice returned,
// whose room doubles each time it fills: a 1 MiB reply read through a
// buffer of iounit and appended was copied some six times over (append
// grows a large slice by a quarter), which cost more than the reads.
func (fsys *Fsys) ReadFile(ctx context.Context, p string) ([]byte, error) {
	f, err := fsys.Open(ctx, p, plan9.OREAD)
	if err != nil {
		return nil, err
	}
	defer f.Clunk(ctx)
	data := make([]byte, 0, firstRead)
	for {
		if len(data) == cap(data) {
			data = slices.Grow(data, len(data))
		}
		n, err := f.Read(ctx, data[len(data):cap(data)], int64(len(data)))
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
}

// WriteFile writes data to p in one WriteAt, truncating it first, and
// creates it with perm if it does not exist; then it syncs the file.
func (fsys *Fsys) WriteFile(ctx context.Context, p string, data []byte, perm plan9.Perm) error {
	f, err := fsys.Open(ctx, p, plan9.OWRITE|plan9.OTRUNC)
	if errs.Is(err, errs.NotExist) {
		f, err = fsys.Create(ctx, p, perm, plan9.OWRITE)
	}
	if err != nil {
		return err
	}
	defer f.Clunk(ctx)
	if _, err = f.WriteAt(ctx, data, 0); err != nil {
		return err
	}
	// A file that completes what it was written at fsync or close (a
	// prompt without a final newline) reports its error to the fsync.
	return f.Sync(ctx)
}
