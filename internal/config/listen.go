package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// CheckListen validates a TCP listen address. Until 9P authentication
// exists, only loopback addresses are accepted: anything else would hand
// the whole tree, and the power to run code, to the network.
func CheckListen(addr string) error {
	addr = strings.TrimPrefix(addr, "tcp!")
	addr = strings.Replace(addr, "!", ":", 1)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad address %q: want host:port, e.g. 127.0.0.1:5640", addr)
	}
	if port == "" {
		return fmt.Errorf("bad address %q: missing port", addr)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to listen on %q: only loopback addresses (127.0.0.1, [::1], localhost) are allowed until 9P authentication is configured", addr)
	}
	return nil
}

func splitHostPortLoose(s string) (string, string, error) { return net.SplitHostPort(s) }
