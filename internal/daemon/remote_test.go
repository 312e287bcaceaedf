package daemon_test

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/testutil"
)

// remoteDaemon starts a daemon that also listens on TCP, on a port its
// listener picked, and returns the dial string of that port.
func remoteDaemon(t *testing.T, cfg *config.Config) (*daemon.Daemon, string) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	d := testutil.Daemon(t, cfg, daemon.Options{})
	return d, tcpAddr(t, d)
}

func tcpAddr(t *testing.T, d *daemon.Daemon) string {
	t.Helper()
	for _, a := range d.Addrs() {
		if a.Network() == "tcp" {
			host, port, _ := net.SplitHostPort(a.String())
			return "tcp!" + host + "!" + port
		}
	}
	t.Fatal("no TCP listener")
	return ""
}

func TestRemoteToken(t *testing.T) {
	cfg := testutil.Home(t, nil)
	_, addr := remoteDaemon(t, cfg)
	for _, f := range []string{cfg.TokenFile(), cfg.CertFile()} {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0600 {
			t.Fatalf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}
	known := filepath.Join(t.TempDir(), "known_hosts")
	var logged []string
	d := &client.Dialer{TokenFile: cfg.TokenFile(), KnownHosts: known,
		Logf: func(f string, a ...any) { logged = append(logged, f) }}
	fsys, err := d.Mount(ctx, addr, "tester", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.ReadFile(ctx, "help"); err != nil {
		t.Fatal(err)
	}
	fsys.Close()
	if len(logged) != 1 {
		t.Errorf("first use logged %q, want one line about the pin", logged)
	}
	if b, _ := os.ReadFile(known); !strings.HasPrefix(string(b), addr+" sha256:") {
		t.Errorf("known_hosts %q, want a pin of %s", b, addr)
	}

	wrong := filepath.Join(t.TempDir(), "wrong")
	os.WriteFile(wrong, []byte(strings.Repeat("ab", 32)+"\n"), 0600)
	open := filepath.Join(t.TempDir(), "open")
	tok, _ := os.ReadFile(cfg.TokenFile())
	os.WriteFile(open, tok, 0644)
	for _, c := range []struct {
		name, file string
		want       error
		text       string
	}{
		{"wrong token", wrong, client.ErrBadToken, "refused the token in " + wrong},
		{"no token file", filepath.Join(t.TempDir(), "none"), client.ErrNoToken, "no such file"},
		{"no token named", "", client.ErrNoToken, "no token file named"},
		{"token readable by others", open, client.ErrNoToken, "mode 0600"},
	} {
		d := &client.Dialer{TokenFile: c.file, KnownHosts: known}
		fsys, err := d.Mount(ctx, addr, "tester", "")
		if err == nil {
			fsys.Close()
			t.Errorf("%s: attached", c.name)
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v mentioning %q", c.name, err, c.want, c.text)
		}
	}
}

// TestRemoteNeedsAuth speaks to the TCP port without the token: in clear,
// and inside TLS but attaching without Tauth. Neither gets a fid.
func TestRemoteNeedsAuth(t *testing.T) {
	cfg := testutil.Home(t, nil)
	_, addr := remoteDaemon(t, cfg)
	_, hostport := client.ParseAddr(addr)
	if fsys, err := client.Mount(ctx, addr, "tester", ""); err == nil {
		fsys.Close()
		t.Fatal("9P in clear over TCP attached")
	}
	tc, err := tls.Dial("tcp", hostport, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewConn(tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Attach(ctx, "tester", ""); err == nil || !strings.Contains(err.Error(), "authentication required") {
		t.Fatalf("attach without Tauth: %v, want authentication required", err)
	}
}

// TestRemotePin: a daemon whose certificate changed is refused by a client
// that pinned the old one, with an error naming the known-hosts file.
func TestRemotePin(t *testing.T) {
	cfg := testutil.Home(t, nil)
	d1, addr := remoteDaemon(t, cfg)
	known := filepath.Join(t.TempDir(), "known_hosts")
	dl := &client.Dialer{TokenFile: cfg.TokenFile(), KnownHosts: known}
	fsys, err := dl.Mount(ctx, addr, "tester", "")
	if err != nil {
		t.Fatal(err)
	}
	fsys.Close()
	d1.Close()

	// A new daemon with a new certificate, and the client's pin moved to
	// its port: as if the first daemon's port were now answered by one
	// that is not it. (Ports come from the listener; none is reused.)
	os.Remove(cfg.CertFile())
	d2, addr2 := remoteDaemon(t, cfg)
	defer d2.Close()
	b, err := os.ReadFile(known)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(known, []byte(strings.Replace(string(b), addr, addr2, 1)), 0600)
	addr = addr2
	fsys, err = dl.Mount(ctx, addr, "tester", "")
	if err == nil {
		fsys.Close()
		t.Fatal("a changed certificate was accepted")
	}
	if !errors.Is(err, client.ErrCertChanged) || !strings.Contains(err.Error(), known) {
		t.Fatalf("changed certificate: %v, want ErrCertChanged naming %s", err, known)
	}
}

func TestRemoteBadListen(t *testing.T) {
	for _, l := range []string{"5640", "127.0.0.1", "127.0.0.1:http", "example.com:5640", "tcp!127.0.0.1!99999"} {
		cfg := testutil.Home(t, nil)
		cfg.Listen = l
		d, err := daemon.Start(cfg, daemon.Options{})
		if err == nil {
			d.Close()
			t.Errorf("listen %q: started", l)
		} else if !strings.Contains(err.Error(), "bad address") {
			t.Errorf("listen %q: %v, want bad address", l, err)
		}
	}
}

// BenchmarkRemote measures what TCP costs over the unix socket: a whole
// connection (dial, TLS handshake, Tauth and the token, attach), and a
// walk+open+read+clunk of a small file on an attached connection.
func BenchmarkRemote(b *testing.B) {
	cfg := testutil.Home(b, nil)
	cfg.Listen = "127.0.0.1:0"
	d := testutil.Daemon(b, cfg, daemon.Options{})
	var tcp string
	for _, a := range d.Addrs() {
		if a.Network() == "tcp" {
			tcp = a.String()
		}
	}
	dl := &client.Dialer{TokenFile: cfg.TokenFile(), KnownHosts: filepath.Join(b.TempDir(), "known_hosts")}
	for _, c := range []struct{ name, addr string }{{"unix", cfg.Socket}, {"tcp", tcp}} {
		b.Run("connect/"+c.name, func(b *testing.B) {
			for b.Loop() {
				fsys, err := dl.Mount(ctx, c.addr, "tester", "")
				if err != nil {
					b.Fatal(err)
				}
				fsys.Close()
			}
		})
		b.Run("read/"+c.name, func(b *testing.B) {
			fsys, err := dl.Mount(ctx, c.addr, "tester", "")
			if err != nil {
				b.Fatal(err)
			}
			defer fsys.Close()
			for b.Loop() {
				if _, err := fsys.ReadFile(ctx, "stats/uptime"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A bridge on another machine may attach on behalf of its callers
// ("pid=N"), but those pids name processes there: the daemon cannot tell
// them from stages, so such an attach may only read what is public, even
// for a pid that here is the daemon's own.
func TestRemotePidAttachIsRestricted(t *testing.T) {
	cfg := testutil.Home(t, nil)
	_, addr := remoteDaemon(t, cfg)
	d := &client.Dialer{TokenFile: cfg.TokenFile(), KnownHosts: filepath.Join(t.TempDir(), "known_hosts")}
	fsys, err := d.Mount(ctx, addr, "tester", "pid="+strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	if _, err := fsys.ReadFile(ctx, "help"); err != nil {
		t.Errorf("read help: %v", err)
	}
	err = fsys.WriteFile(ctx, "a/x.json", []byte(`{"hooks": {"preTurn": ["touch /tmp/pwned"]}}`), 0)
	if err == nil || !strings.Contains(err.Error(), "sandboxed code may not") {
		t.Fatalf("TRIED a write of a/x.json through a remote pid= attach: %v, want a refusal", err)
	}
}
