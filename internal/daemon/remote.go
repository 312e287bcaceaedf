package daemon

import (
	"crypto/tls"
	"net"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/ninep"
)

// handshakeTimeout bounds a TLS handshake, so that a connection that
// never speaks holds nothing for long.
const handshakeTimeout = 10 * time.Second

// listenTCP serves 9P on cfg.Listen: always inside TLS with the daemon's
// own certificate, and only to connections that present the token through
// Tauth (ninep/auth.go, docs/remote.md). Both are made at the first start
// with a listen address and kept in the configuration directory.
func (d *Daemon) listenTCP(cfg *config.Config) error {
	if err := config.CheckListen9P(cfg.Listen); err != nil {
		return err
	}
	tok, err := ninep.LoadOrCreateToken(cfg.TokenFile())
	if err != nil {
		return err
	}
	cert, fp, err := ninep.LoadOrCreateCert(cfg.CertFile())
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", config.ListenAddr(cfg.Listen))
	if err != nil {
		return err
	}
	tcfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	d.log.Printf("9P over TLS on %s, certificate %s; clients present the token in %s", l.Addr(), fp, cfg.TokenFile())
	d.serve(l, func(c net.Conn) {
		tc := tls.Server(c, tcfg)
		c.SetDeadline(time.Now().Add(handshakeTimeout))
		if err := tc.Handshake(); err != nil {
			d.log.Printf("tls from %s: %v", c.RemoteAddr(), err)
			return
		}
		c.SetDeadline(time.Time{})
		d.Server.ServeAuthConn(tc, tc, tok)
	})
	return nil
}
