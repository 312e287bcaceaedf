package ns

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// ErrorLog keeps the recent errors of requests through the tree, for the
// top-level file errors. Through FUSE a failed write(2) or close(2) can
// only give its program an errno ("Invalid argument"); the daemon's text
// ("bad request: parallel=1e3: want a whole number from 1 to 256") is
// then one `tail $OLLIE/errors` away. Each error is one line, newest
// last: time, operation, path and message, redacted (NAMESPACE rule 5)
// and kept to one line of text. It also goes to the daemon's log.
//
// The log is a ring of the last ErrorLogSize errors, in memory only: it
// describes what just happened, not a history worth a disk write.
type ErrorLog struct {
	logf    func(string, ...any)
	secrets []string
	now     func() time.Time
	vers    *tree.Version // of the file, bumped on each error

	mu    sync.Mutex
	ring  []string // lines, oldest at next once full
	next  int
	bytes int // total length of the lines in ring
}

// ErrorLogSize is how many errors the errors file keeps.
const ErrorLogSize = 100

// maxErrorText bounds the message of one line.
const maxErrorText = 512

// NewErrorLog returns an empty log. logf, if set, receives each line as
// well (the daemon's log); every value in secrets is redacted from the
// messages.
func NewErrorLog(logf func(string, ...any), secrets []string) *ErrorLog {
	l := &ErrorLog{logf: logf, now: time.Now}
	for _, s := range secrets {
		if len(s) >= 4 { // shorter ones would redact ordinary words
			l.secrets = append(l.secrets, s)
		}
	}
	return l
}

// Record notes a failed operation on path. Interrupted requests (Ctrl-C,
// a flushed blocking read) are the user's doing, not errors.
func (l *ErrorLog) Record(op, path string, err error) {
	if l == nil || err == nil || errs.Is(err, errs.Interrupted) {
		return
	}
	rest := op + " " + quotePath(path) + ": " + l.redact(err.Error())
	line := l.now().UTC().Format("2006-01-02T15:04:05.000Z") + " " + rest + "\n"
	l.mu.Lock()
	if len(l.ring) < ErrorLogSize {
		l.ring = append(l.ring, line)
	} else {
		l.bytes -= len(l.ring[l.next])
		l.ring[l.next] = line
		l.next = (l.next + 1) % ErrorLogSize
	}
	l.bytes += len(line)
	l.mu.Unlock()
	if l.vers != nil {
		l.vers.Bump()
	}
	if l.logf != nil {
		l.logf("tree: %s", rest) // the log has its own time
	}
}

// render returns the lines, oldest first.
func (l *ErrorLog) render() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := make([]byte, 0, l.bytes)
	for i := range l.ring {
		b = append(b, l.ring[(l.next+i)%len(l.ring)]...)
	}
	return b, nil
}

// size is the file's length for stat: true, and cheap.
func (l *ErrorLog) size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.bytes)
}

// bearer catches tokens an HTTP error may echo back.
var bearer = regexp.MustCompile(`(?i)(bearer|x-api-key:?|api[_-]?key[=:"' ]+)\s*[A-Za-z0-9._~+/=-]{8,}`)

// redact removes secrets from a message and makes it one line of text:
// control characters become spaces, bad UTF-8 is replaced, length is cut.
func (l *ErrorLog) redact(msg string) string {
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

// quotePath shows a path as is when it is plain (names in the tree are
// validated), quoted when it holds anything else (a refused create).
func quotePath(p string) string {
	if p == "" {
		return "/"
	}
	for _, c := range []byte(p) {
		if c <= ' ' || c >= 0x7f || c == '"' || c == ':' {
			return strconv.Quote(p)
		}
	}
	return p
}

const errorsDoc = "The last 100 errors of opens, writes and closes through the tree, newest last: time op path: message (redacted). What a shell shows only as an errno (Invalid argument) is explained here."

// errorsFile is the top-level file errors: a snapshot at open, with a
// true length and a version that moves with each error, so tail -f and
// editors see it change.
func (n *NS) errorsFile() *tree.Synth {
	l := n.Errors
	f := n.FS.Text("errors", l.render)
	f.Length = l.size
	l.vers = &f.Vers
	return f
}

// secretValues are the values the errors file must never show: the
// backends' keys.
func secretValues(c *config.Config) []string {
	var out []string
	for _, v := range c.Secrets {
		out = append(out, v)
	}
	return out
}
