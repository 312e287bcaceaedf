package main

import (
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/daemon"
	"ollie.dev/ollie/internal/testutil"
)

// TestWebSlowClients: any local process can connect to `ollie web`'s
// port. One that opens connections and sends a header a byte at a time,
// or nothing at all, must not hold them forever (each is a goroutine and
// a file descriptor): the server hangs up on a header that does not
// arrive. The token is never written to its log.
func TestWebSlowClients(t *testing.T) {
	cfg := testutil.Home(t, nil)
	d, err := daemon.Start(cfg, daemon.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cmd, u, errb := webProcess(t, cfg.Socket)
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if _, tok, _ := strings.Cut(errb.String(), "token="); tok != "" {
			t.Errorf("the token is in the log: %s", errb.String())
		}
	}()
	addr := strings.TrimPrefix(u, "http://")
	addr, _, _ = strings.Cut(addr, "/")
	var conns []net.Conn
	for i := range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i%2 == 0 {
			// A header begun and never finished.
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+addr+"\r\nX-Slow: a")
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(testutil.HangTimeout))
		_, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("connection %d (sent %v of a header) still open after %v", i, i%2 == 0, testutil.HangTimeout)
		}
	}
}
