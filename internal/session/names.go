package session

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
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

// NewID returns a session id: <unix-ns>-<6 hex>, which sorts by creation.
func NewID() string {
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%019d-%s", time.Now().UnixNano(), hex.EncodeToString(b[:]))
}

func validID(s string) bool {
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
