package client

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The known-hosts file pins the certificate of each daemon a client has
// reached over TCP, trusted on first use as ssh does with host keys. One
// line per daemon:
//
//	tcp!HOST!PORT sha256:HEX
//
// HOST and PORT as dialed; HEX the SHA-256 of the certificate's DER, as
// the daemon logs it. A line that does not parse is an error, not skipped:
// a damaged file must not turn into a fresh first use.

// pinKey is the known-hosts name of a TCP address.
func pinKey(hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port == "" {
		return "", fmt.Errorf("bad address %q: want tcp!HOST!PORT", hostport)
	}
	return "tcp!" + host + "!" + port, nil
}

func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// checkPin compares fp with the pin of key in file, pinning it if key has
// none. It reports whether it pinned. The file is locked meanwhile, so
// that two first uses at once pin one certificate.
func checkPin(file, key, fp string) (pinned bool, err error) {
	if file == "" {
		return false, errors.New("no known-hosts file to pin the daemon's certificate in")
	}
	if err := os.MkdirAll(filepath.Dir(file), 0700); err != nil {
		return false, err
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0600)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return false, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return false, err
	}
	old, err := findPin(file, data, key)
	switch {
	case err != nil:
		return false, err
	case old == fp:
		return false, nil
	case old != "":
		return false, fmt.Errorf("%s: %w: it is %s, %s pinned %s; if the daemon's certificate was replaced on purpose, delete the line of %s from %s and connect again, otherwise someone may be intercepting the connection",
			key, ErrCertChanged, fp, file, old, key, file)
	}
	if _, err := f.WriteString(key + " " + fp + "\n"); err != nil {
		return false, err
	}
	return true, f.Sync()
}

// findPin returns the fingerprint pinned for key in data, or "".
func findPin(file string, data []byte, key string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, fp, ok := strings.Cut(line, " ")
		fp = strings.TrimSpace(fp)
		if !ok || !strings.HasPrefix(k, "tcp!") || !strings.HasPrefix(fp, "sha256:") || len(fp) != len("sha256:")+64 {
			return "", fmt.Errorf("%s:%d: bad line, want tcp!HOST!PORT sha256:HEX", file, n)
		}
		if k == key {
			return fp, nil
		}
	}
	return "", sc.Err()
}
