package session

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/valid"
)

func checkCwd(p string) error {
	if err := valid.String("cwd", p); err != nil {
		return err
	}
	if !filepath.IsAbs(p) {
		return errs.E(errs.Invalid, "cwd "+strconv.Quote(p)+" is not an absolute path")
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return errs.E(errs.Invalid, "cwd "+strconv.Quote(p)+" is not a directory")
	}
	return nil
}

// checkCwd is checkCwd and the daemon's own rules.
func (m *Manager) checkCwd(p string) error {
	if err := checkCwd(p); err != nil {
		return err
	}
	if m.o.CheckCwd != nil {
		return m.o.CheckCwd(p)
	}
	return nil
}

func checkModel(m string) error {
	if err := valid.String("model", m); err != nil {
		return err
	}
	if len(m) > 200 || strings.ContainsAny(m, "\n\t") {
		return errs.E(errs.Invalid, "bad model name "+strconv.Quote(m)+": at most 200 bytes, no tab or newline")
	}
	return nil
}

// reserved are the names of fixed files in s/, which no session may take.
var reserved = map[string]bool{"new": true, "idx": true, "sh": true, "b": true, "bfg": true, "bbg": true, "ls": true, "kill": true, "cleanup": true}

// CheckName validates a session name.
func CheckName(n string) error {
	if !validName(n) || reserved[n] || validID(n) {
		return errs.E(errs.Invalid, "bad session name "+strconv.Quote(n)+": use letters, digits, '.', '_' and '-', not a reserved name")
	}
	return nil
}

func validName(n string) bool { return config.ValidName(n) }

// An id is 12 characters, TTTTTT-RRRRR: six of the seconds since 2025
// (sorting as time does) and five random ones (33 million a second), in the lowercase
// alphabet without i, l, o and u, so that it reads and types easily and
// a prefix is enough to name it. Ids of the former form (<unix-ns>-<6
// hex>) on disk still load.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

var idEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// NewID returns a new id; callers check it is not taken.
func NewID() string {
	t := uint64(max(time.Since(idEpoch)/time.Second, 0))
	var r [5]byte
	rand.Read(r[:])
	b := make([]byte, 0, 12)
	for i := 5; i >= 0; i-- {
		b = append(b, idAlphabet[(t>>(5*i))&31])
	}
	b = append(b, '-')
	for _, x := range r {
		b = append(b, idAlphabet[x&31])
	}
	return string(b)
}

func validID(s string) bool {
	if len(s) == 12 && s[6] == '-' {
		for i := 0; i < 12; i++ {
			if i != 6 && strings.IndexByte(idAlphabet, s[i]) < 0 {
				return false
			}
		}
		return true
	}
	return validOldID(s)
}

func validOldID(s string) bool {
	ns, hx, ok := strings.Cut(s, "-")
	if !ok || len(ns) != 19 || len(hx) != 6 {
		return false
	}
	if _, err := strconv.ParseUint(ns, 10, 64); err != nil {
		return false
	}
	_, err := hex.DecodeString(hx)
	return err == nil
}
