package config

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
)

// CheckListen validates a TCP listen address of a service without
// authentication (the scripted LLM server, the MCP proxy): only loopback
// addresses are accepted, since anything else would hand the service to
// the network.
func CheckListen(addr string) error {
	host, err := splitListen(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to listen on %q: only loopback addresses (127.0.0.1, [::1], localhost) are allowed for a service without authentication", addr)
	}
	return nil
}

// CheckListen9P validates the daemon's TCP listen address (listen in
// ollie.json, -listen). 9P over TCP always runs inside TLS and needs the
// token (docs/remote.md), so any host may be named, but it must be an
// address: "host:port", "tcp!host!port" or ":port" (every interface).
func CheckListen9P(addr string) error {
	host, err := splitListen(addr)
	if err != nil {
		return err
	}
	if host == "" || host == "localhost" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("bad address %q: %q is not an IP address or localhost (a daemon listens on its own addresses, e.g. 0.0.0.0:5640 or 127.0.0.1:5640)", addr, host)
	}
	return nil
}

// ListenAddr turns a listen address ("tcp!host!port" or "host:port") into
// the form net.Listen takes.
func ListenAddr(addr string) string {
	addr = strings.TrimPrefix(addr, "tcp!")
	if i := strings.LastIndex(addr, "!"); i >= 0 {
		addr = net.JoinHostPort(addr[:i], addr[i+1:])
	}
	return addr
}

func splitListen(addr string) (host string, err error) {
	a := ListenAddr(addr)
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", fmt.Errorf("bad address %q: want host:port, e.g. 127.0.0.1:5640", addr)
	}
	if port == "" {
		return "", fmt.Errorf("bad address %q: missing port", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return "", fmt.Errorf("bad address %q: port %q is not a number from 0 to 65535", addr, port)
	}
	return host, nil
}

func splitHostPortLoose(s string) (string, string, error) { return net.SplitHostPort(s) }

// The files of 9P over TCP (docs/remote.md), all of mode 0600 in the
// configuration directory, which stages can never read.

// TokenFile is the daemon's token, made at its first start with a listen
// address, and the default token a client presents.
func (c *Config) TokenFile() string { return filepath.Join(c.ConfigDir, "token") }

// CertFile holds the daemon's TLS key and self-signed certificate (PEM).
func (c *Config) CertFile() string { return filepath.Join(c.ConfigDir, "tls.pem") }

// KnownHosts pins the certificates of the daemons this client reached.
func (c *Config) KnownHosts() string { return filepath.Join(c.ConfigDir, "known_hosts") }
