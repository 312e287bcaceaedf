// Package secretfile reads the files that hold the secrets of 9P over
// TCP: the token clients present and the daemon's TLS key. The daemon and
// its clients read them with the same rules, so a file one accepts the
// other does too.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// TokenLen is the length of a token's text: 32 random bytes in hex.
const TokenLen = 64

// maxSize bounds what Read reads: a key with its certificate is a few
// KiB; a bigger file is not one of ours.
const maxSize = 1 << 20

// Read reads a secret file, refusing one that others may read or write,
// one that is not a regular file, and one that is not ours: a secret
// others could read is no longer one, and one others could write is
// theirs. The checks and the read are on one open of the file.
func Read(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no file named")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s belongs to uid %d, not to us (uid %d)", path, st.Uid, os.Geteuid())
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0077 != 0 {
		return nil, fmt.Errorf("%s has mode %v: a secret must be a regular file of mode 0600 (chmod 600 %s)", path, fi.Mode(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSize {
		return nil, fmt.Errorf("%s is over %d bytes: not a secret of ollie's", path, maxSize)
	}
	return b, nil
}

// Token reads a token file (see Read): TokenLen lower-case hex digits,
// and a newline or not. It returns the digits.
func Token(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no token file named")
	}
	b, err := Read(path)
	if err != nil {
		return nil, err
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) != TokenLen || strings.Trim(tok, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%s does not hold a token (%d lower-case hex digits)", path, TokenLen)
	}
	return []byte(tok), nil
}
