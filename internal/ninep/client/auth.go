package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/secretfile"
)

// Errors of reaching a daemon over TCP. The errors a Dialer returns wrap
// one of them and name the file concerned, so that a program can add what
// its user should do (the flag that names another file, say).
var (
	// ErrNoToken: the token file cannot be read or holds no token.
	ErrNoToken = errors.New("no token to present to the daemon")
	// ErrBadToken: the daemon refused the token.
	ErrBadToken = errors.New("the daemon refused the token")
	// ErrCertChanged: the daemon's certificate is not the pinned one.
	ErrCertChanged = errors.New("the daemon's certificate has changed")
)

// A Dialer reaches a daemon at an address of any form ParseAddr accepts.
// A unix socket is dialed as Dial does. TCP runs inside TLS: the daemon's
// certificate is pinned in KnownHosts on first use and must match that
// pin afterwards, and Attach on the connection first presents the token
// in TokenFile through Tauth (the protocol is in ../auth.go and
// docs/remote.md). There is no TCP without both.
type Dialer struct {
	TokenFile  string // the daemon's token, mode 0600
	KnownHosts string // address -> certificate fingerprint, one a line
	// Logf, if set, is told when a certificate is pinned for the first
	// time, with its fingerprint, which the user may compare with the one
	// the daemon logged.
	Logf func(format string, args ...any)
}

// remoteAuth is what a connection's Attach presents.
type remoteAuth struct {
	token []byte
	file  string // where the token came from, for errors
	addr  string
}

// Dial connects to addr and negotiates the protocol version.
func (d *Dialer) Dial(ctx context.Context, addr string) (*Conn, error) {
	network, hostport := ParseAddr(addr)
	if network != "tcp" {
		return Dial(ctx, network, hostport)
	}
	key, err := pinKey(hostport)
	if err != nil {
		return nil, err
	}
	tok, err := secretfile.Token(d.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", key, ErrNoToken, err)
	}
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return nil, errs.E(errs.Unavailable, err)
	}
	tc := tls.Client(nc, &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The certificate is self-signed: no chain to verify, the pin is
		// the check. VerifyConnection runs despite InsecureSkipVerify.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the daemon sent no certificate")
			}
			return d.pin(key, cs.PeerCertificates[0])
		},
	})
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		if errors.Is(err, ErrCertChanged) {
			return nil, err
		}
		return nil, errs.E(errs.Unavailable, key+": tls handshake", err)
	}
	c, err := newConn(ctx, tc, DefaultMsize)
	if err != nil {
		return nil, err
	}
	c.auth = &remoteAuth{token: tok, file: d.TokenFile, addr: key}
	return c, nil
}

// Mount dials addr and attaches to the root of aname as uname.
func (d *Dialer) Mount(ctx context.Context, addr, uname, aname string) (*Fsys, error) {
	c, err := d.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return mount(ctx, c, uname, aname)
}

func (d *Dialer) pin(key string, cert *x509.Certificate) error {
	pinned, err := checkPin(d.KnownHosts, key, fingerprint(cert.Raw))
	if err != nil {
		return err
	}
	if pinned && d.Logf != nil {
		d.Logf("pinned the certificate of %s, %s, in %s", key, fingerprint(cert.Raw), d.KnownHosts)
	}
	return nil
}

// authenticate presents the token on a connection that needs it and
// returns the afid to attach with; nil, and no error, on one that does not.
func (c *Conn) authenticate(ctx context.Context, uname, aname string) (*Fid, error) {
	a := c.auth
	if a == nil {
		return nil, nil
	}
	f, err := c.newFid()
	if err != nil {
		return nil, err
	}
	cl, err := c.get(plan9.Tauth)
	if err != nil {
		c.freeFid(f.num)
		return nil, err
	}
	cl.put32(f.num)
	cl.putString(uname)
	cl.putString(aname)
	err = c.rpc(ctx, cl, nil)
	c.put(cl)
	if err != nil {
		c.freeFid(f.num)
		return nil, fmt.Errorf("%s: authentication: %w", a.addr, err)
	}
	if _, err := f.write(ctx, a.token, 0); err != nil {
		f.Clunk(context.WithoutCancel(ctx))
		if strings.Contains(err.Error(), "wrong token") {
			return nil, fmt.Errorf("%s: %w in %s", a.addr, ErrBadToken, a.file)
		}
		return nil, fmt.Errorf("%s: authentication: %w", a.addr, err)
	}
	return f, nil
}

// fidNum is the number of an afid; NOFID for none.
func (f *Fid) fidNum() uint32 {
	if f == nil {
		return plan9.NOFID
	}
	return f.num
}
