package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/ninep/ninetest"
)

// hangTimeout bounds waits that only exist to turn a hang into a failure.
const hangTimeout = 20 * time.Second

// transports runs f over a unix socket and over os.Pipes.
func transports(t *testing.T, f func(t *testing.T, tree *ninetest.Tree, c *client.Conn)) {
	t.Run("unix", func(t *testing.T) {
		tree := ninetest.NewTree()
		c, _ := dialUnix(t, tree)
		f(t, tree, c)
	})
	t.Run("pipe", func(t *testing.T) {
		tree := ninetest.NewTree()
		rwc, err := tree.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.NewConn(rwc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		f(t, tree, c)
	})
}

func dialUnix(t testing.TB, tree *ninetest.Tree) (*client.Conn, *ninetest.Listener) {
	sock := filepath.Join(t.TempDir(), "9p.sock")
	l, err := tree.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := client.Dial(context.Background(), "", "unix!"+sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, l
}

func attach(t testing.TB, c *client.Conn) *client.Fsys {
	root, err := c.Attach(context.Background(), "glenda", "")
	if err != nil {
		t.Fatal(err)
	}
	return &client.Fsys{Root: root}
}

func TestFileOps(t *testing.T) {
	transports(t, func(t *testing.T, tree *ninetest.Tree, c *client.Conn) {
		ctx := context.Background()
		fsys := attach(t, c)
		if got := c.Msize(); got != ninetest.Msize {
			t.Errorf("msize %d, want %d", got, ninetest.Msize)
		}
		data, err := fsys.ReadFile(ctx, "hello")
		if err != nil || string(data) != "hello, world\n" {
			t.Fatalf("ReadFile(hello) = %q, %v", data, err)
		}
		if err := fsys.WriteFile(ctx, "dir/new", []byte("one"), 0644); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Rename(ctx, "dir/new", "dir/renamed"); err != nil {
			t.Fatal(err)
		}
		d, err := fsys.Stat(ctx, "dir/renamed")
		if err != nil || d.Name != "renamed" || d.Length != 3 {
			t.Fatalf("Stat(dir/renamed) = %v, %v", d, err)
		}
		ds, err := fsys.ReadDir(ctx, "dir")
		if err != nil || len(ds) != 1 || ds[0].Name != "renamed" {
			t.Fatalf("ReadDir(dir) = %v, %v", ds, err)
		}
		if err := fsys.Remove(ctx, "dir/renamed"); err != nil {
			t.Fatal(err)
		}
		_, err = fsys.Stat(ctx, "dir/renamed")
		if !errs.Is(err, errs.NotExist) {
			t.Fatalf("Stat of removed file: %v, want file not found", err)
		}
	})
}

func TestServerErrorText(t *testing.T) {
	transports(t, func(t *testing.T, tree *ninetest.Tree, c *client.Conn) {
		ctx := context.Background()
		fsys := attach(t, c)
		f, err := fsys.Open(ctx, "ctl", plan9.OWRITE)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Clunk(ctx)
		_, err = f.WriteAt(ctx, []byte("bogus\n"), 0)
		var se client.Error
		if !errors.As(err, &se) || err.Error() != "bad request: unknown command bogus" {
			t.Fatalf("write bogus to ctl: %#v, want the server's text as client.Error", err)
		}
		if k := errs.KindOf(err); k != errs.Invalid || k.Errno().Error() != "invalid argument" {
			t.Errorf("kind of %q is %v", err, k)
		}
		if _, err := f.WriteAt(ctx, []byte("ok go"), 0); err != nil {
			t.Fatalf("write ok to ctl: %v", err)
		}
		_, err = fsys.Open(ctx, "dir/nothing/here", plan9.OREAD)
		if !errs.Is(err, errs.NotExist) {
			t.Errorf("open of missing file: %v", err)
		}
		_, err = fsys.Open(ctx, "hello/x", plan9.OREAD)
		if err == nil {
			t.Errorf("walk in a file succeeded")
		}
	})
}

func TestLargeIO(t *testing.T) {
	transports(t, func(t *testing.T, tree *ninetest.Tree, c *client.Conn) {
		ctx := context.Background()
		fsys := attach(t, c)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, 8+ messages
		if err := fsys.WriteFile(ctx, "big", big, 0644); err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Open(ctx, "big", plan9.OREAD)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Clunk(ctx)
		got := make([]byte, len(big)+10)
		n, err := f.ReadAt(ctx, got, 0)
		if err != io.EOF || n != len(big) || !bytes.Equal(got[:n], big) {
			t.Fatalf("ReadAt = %d, %v; want %d, EOF and equal data", n, err, len(big))
		}
	})
}

func TestDeepWalk(t *testing.T) {
	tree := ninetest.NewTree()
	c, _ := dialUnix(t, tree)
	ctx := context.Background()
	fsys := attach(t, c)
	var path []string
	for i := range 40 {
		path = append(path, "d"+string(rune('a'+i%26)))
		f, err := fsys.Create(ctx, strings.Join(path, "/"), plan9.DMDIR|0755, plan9.OREAD)
		if err != nil {
			t.Fatal(err)
		}
		f.Clunk(ctx)
	}
	f, err := fsys.Root.Walk(ctx, path...)
	if err != nil {
		t.Fatalf("walk of %d names: %v", len(path), err)
	}
	if f.Qid().Type&plan9.QTDIR == 0 {
		t.Errorf("walked to %v, want a directory", f.Qid())
	}
	f.Clunk(ctx)
	_, err = fsys.Root.Walk(ctx, append(path[:30:30], "missing", "x")...)
	if !errs.Is(err, errs.NotExist) {
		t.Errorf("walk to missing deep file: %v", err)
	}
}

func TestConcurrentRPCs(t *testing.T) {
	transports(t, func(t *testing.T, tree *ninetest.Tree, c *client.Conn) {
		ctx := context.Background()
		fsys := attach(t, c)
		var wg sync.WaitGroup
		errc := make(chan error, 32)
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := "f" + string(rune('A'+i))
				want := strings.Repeat(name, 1000)
				for range 20 {
					if err := fsys.WriteFile(ctx, name, []byte(want), 0644); err != nil {
						errc <- err
						return
					}
					got, err := fsys.ReadFile(ctx, name)
					if err != nil || string(got) != want {
						errc <- errors.New("read back wrong data")
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
	})
}

// ReadFile grows the slice it reads into: a file of any length comes
// back whole, at the edges of its first read and of the message size.
func TestReadFileSizes(t *testing.T) {
	transports(t, func(t *testing.T, tree *ninetest.Tree, c *client.Conn) {
		ctx := context.Background()
		fsys := attach(t, c)
		most := int(c.Msize()) - plan9.IOHDRSZ
		for _, n := range []int{0, 1, 8191, 8192, 8193, 16385, most - 1, most, most + 1, 3*most + 5} {
			want := make([]byte, n)
			for i := range want {
				want[i] = byte(i*7 + i/251)
			}
			name := fmt.Sprintf("size%d", n)
			if err := fsys.WriteFile(ctx, name, want, 0644); err != nil {
				t.Fatalf("write %d bytes: %v", n, err)
			}
			got, err := fsys.ReadFile(ctx, name)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("ReadFile of %d bytes: %d bytes back, %v", n, len(got), err)
			}
		}
	})
}

func TestParseAddr(t *testing.T) {
	for _, tt := range []struct{ in, net, addr string }{
		{"unix!/run/ollie.sock", "unix", "/run/ollie.sock"},
		{"/run/ollie.sock", "unix", "/run/ollie.sock"},
		{"ollie.sock", "unix", "ollie.sock"},
		{"tcp!localhost!5640", "tcp", "localhost:5640"},
		{"tcp!10.0.0.1", "tcp", "10.0.0.1:564"},
		{"net!::1!564", "tcp", "[::1]:564"},
		{"127.0.0.1:5640", "tcp", "127.0.0.1:5640"},
	} {
		n, a := client.ParseAddr(tt.in)
		if n != tt.net || a != tt.addr {
			t.Errorf("ParseAddr(%q) = %q, %q; want %q, %q", tt.in, n, a, tt.net, tt.addr)
		}
	}
}
