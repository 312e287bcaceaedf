package ns

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxErrorText bounds the message of one line of errors.
const maxErrorText = 512

// bearer catches tokens an HTTP error may echo back.
var bearer = regexp.MustCompile(`(?i)(bearer|x-api-key:?|api[_-]?key[=:"' ]+)\s*[A-Za-z0-9._~+/=-]{8,}`)

// redact removes secrets from a message and makes it one line of text:
// control characters become spaces, bad UTF-8 is replaced, length is cut.
func (l *ErrorLog) redact(msg string) string {
	if l.clean != nil {
		msg = l.clean(msg)
	}
	for _, s := range l.secrets {
		msg = strings.ReplaceAll(msg, s, "(secret)")
	}
	msg = bearer.ReplaceAllString(msg, "$1 (secret)")
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	msg = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return msg
}
