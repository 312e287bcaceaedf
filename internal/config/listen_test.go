package config

import (
	"strings"
	"testing"
)

func TestListen(t *testing.T) {
	for _, c := range []struct {
		addr      string
		ninep, lo string // "" for accepted, else a word of the error
		net       string // ListenAddr
	}{
		{"127.0.0.1:5640", "", "", "127.0.0.1:5640"},
		{"tcp!127.0.0.1!5640", "", "", "127.0.0.1:5640"},
		{"tcp!::1!5640", "", "", "[::1]:5640"},
		{"localhost:0", "", "", "localhost:0"},
		{"0.0.0.0:5640", "", "loopback", "0.0.0.0:5640"},
		{":5640", "", "loopback", ":5640"},
		{"192.168.1.2:5640", "", "loopback", "192.168.1.2:5640"},
		{"example.com:5640", "not an IP address", "loopback", "example.com:5640"},
		{"5640", "bad address", "bad address", "5640"},
		{"127.0.0.1:", "missing port", "missing port", "127.0.0.1:"},
		{"127.0.0.1:http", "not a number", "not a number", "127.0.0.1:http"},
		{"tcp!127.0.0.1!70000", "not a number", "not a number", "127.0.0.1:70000"},
	} {
		for _, k := range []struct {
			name  string
			check func(string) error
			want  string
		}{{"CheckListen9P", CheckListen9P, c.ninep}, {"CheckListen", CheckListen, c.lo}} {
			err := k.check(c.addr)
			if k.want == "" && err != nil || k.want != "" && (err == nil || !strings.Contains(err.Error(), k.want)) {
				t.Errorf("%s(%q) = %v, want %q", k.name, c.addr, err, k.want)
			}
		}
		if got := ListenAddr(c.addr); got != c.net {
			t.Errorf("ListenAddr(%q) = %q, want %q", c.addr, got, c.net)
		}
	}
}
