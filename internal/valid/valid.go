// Package valid checks the values written into the tree: text that must
// be text, and numbers that must be numbers. Every check fails with an
// errs.Invalid error that names what was checked and what is allowed, so
// the writer learns both from one error:
//
//	env: not UTF-8 text (byte 0xff at offset 12)
//	parallel=2 junk: want a whole number from 1 to 256
//
// Files that take free-form bytes (m/, tmp/, t/) are not checked: they
// are the user's files and stay binary-safe.
package valid

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"ollie.dev/ollie/internal/errs"
)

// Text checks that b is UTF-8 text without NUL bytes. what names the file
// or key in the error.
func Text(what string, b []byte) error { return text(what, b, false) }

// TextPrefix is Text for the bytes of a message that may still grow: a
// UTF-8 sequence cut by the end of b is not an error yet, since the next
// write may finish it.
func TextPrefix(what string, b []byte) error { return text(what, b, true) }

// String is Text for a string.
func String(what, s string) error { return text(what, []byte(s), false) }

func text(what string, b []byte, prefix bool) error {
	for i := 0; i < len(b); {
		c := b[i]
		if c == 0 {
			return errs.E(errs.Invalid, fmt.Sprintf("%s: NUL byte at offset %d: want text", what, i))
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			if prefix && !utf8.FullRune(b[i:]) {
				return nil // cut short by the end of this write
			}
			return errs.E(errs.Invalid, fmt.Sprintf("%s: not UTF-8 text (byte %#02x at offset %d)", what, c, i))
		}
		i += n
	}
	return nil
}

// Int parses a whole number in lo..hi, strictly: digits with an optional
// sign and nothing else, so "1e3", "2 junk" and "0x10" are errors. key is
// the setting's name, shown with the value in the error.
func Int(key, s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, errs.E(errs.Invalid, fmt.Sprintf("%s=%s: want a whole number from %d to %d", key, short(s), lo, hi))
	}
	return n, nil
}

// Float parses a decimal number in lo..hi, strictly: no trailing text, no
// NaN or infinity, no hexadecimal or underscores.
func Float(key, s string, lo, hi float64) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi || !decimal(s) {
		return 0, errs.E(errs.Invalid, fmt.Sprintf("%s=%s: want a number from %s to %s",
			key, short(s), strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64)))
	}
	return f, nil
}

// decimal reports whether s is spelled as a plain decimal number (with an
// optional exponent); ParseFloat also takes "0x1p-2", "1_0" and "Inf".
func decimal(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case c >= '0' && c <= '9', c == '.', c == '-', c == '+', c == 'e', c == 'E':
		default:
			return false
		}
	}
	return true
}

// short quotes a value for an error when it is not plain, and cuts it.
func short(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	for _, c := range []byte(s) {
		if c < ' ' || c >= utf8.RuneSelf || c == '"' {
			return strconv.Quote(s)
		}
	}
	return s
}
