package ns

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// ErrorLog keeps the recent errors of requests through the tree, for the
// top-level file errors. Through FUSE a failed write(2) or close(2) can
// only give its program an errno ("Invalid argument"); the daemon's text
// ("bad request: parallel=1e3: want a whole number from 1 to 256") is
// then one `tail $OLLIE/errors` away. Each error is one line, oldest
// first: time, who, operation, path and message, redacted (NAMESPACE
// rule 5) and kept to one line of text. It also goes to the daemon's log.
//
// The errors of model code (stages) are kept apart from the user's, each
// in a ring of ErrorLogSize, so that a stage refused a thousand times
// cannot push the user's errors out; and at most stageLogBudget of them
// a minute reach the daemon's log. In memory only: the file says what
// just happened, not a history worth a disk write.
type ErrorLog struct {
	logf    func(string, ...any)
	secrets []string
	now     func() time.Time
	vers    *tree.Version       // of the file, bumped on each error
	clean   func(string) string // the daemon's redactor, if any; before redact

	mu     sync.Mutex
	seq    uint64
	user   ring // the user's and hooks' errors
	stages ring // errors of stages
	minute int64
	logged int // stage lines logged in minute
	quiet  int // and not logged
	// the last error's who and path, and message
	lastKey, lastMsg string
}

// ErrorLogSize is how many errors the errors file keeps of the user's,
// and as many of stages'.
const ErrorLogSize = 100

// stageLogBudget bounds the stage errors logged a minute.
const stageLogBudget = 60

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

// Record notes a failed operation on path by who (nil: the user).
// Interrupted requests (Ctrl-C, a flushed blocking read) are the user's
// doing, not errors.
func (l *ErrorLog) Record(who *tree.Principal, op, path string, err error) {
	if l == nil || err == nil || errs.Is(err, errs.Interrupted) {
		return
	}
	now := l.now()
	msg := l.redact(err.Error())
	rest := whoName(who) + " " + op + " " + quotePath(path) + ": " + msg
	line := now.UTC().Format("2006-01-02T15:04:05.000Z") + " " + rest + "\n"
	l.mu.Lock()
	// A message voided by a failed write fails its commit too ("nothing
	// sent: " and the write's error): one failure, one line.
	key := whoName(who) + " " + path
	if key == l.lastKey && strings.Contains(msg, "nothing sent: "+l.lastMsg) {
		l.mu.Unlock()
		return
	}
	l.lastKey, l.lastMsg = key, msg
	l.seq++
	r := &l.user
	if isStage(who) {
		r = &l.stages
	}
	r.add(entry{seq: l.seq, line: line})
	logs := l.toLogLocked(who, now, rest)
	l.mu.Unlock()
	if l.vers != nil {
		l.vers.Bump()
	}
	if l.logf != nil {
		for _, s := range logs {
			l.logf("tree: %s", s) // the log has its own time
		}
	}
}

// toLogLocked returns what goes to the daemon's log for an error: its
// line, unless it is a stage's over the minute's budget, preceded by a
// count of the stage errors left out in the minute before.
func (l *ErrorLog) toLogLocked(who *tree.Principal, now time.Time, rest string) []string {
	if !isStage(who) {
		return []string{rest}
	}
	var out []string
	if m := now.Unix() / 60; m != l.minute {
		if l.quiet > 0 {
			out = append(out, fmt.Sprintf("%d more errors of stages not logged (see errors)", l.quiet))
		}
		l.minute, l.logged, l.quiet = m, 0, 0
	}
	if l.logged >= stageLogBudget {
		l.quiet++
		return out
	}
	l.logged++
	return append(out, rest)
}

func isStage(who *tree.Principal) bool { return who != nil && !who.Hook }

// whoName is the second field of a line: user, hook, or the stage's
// session.
func whoName(who *tree.Principal) string {
	switch {
	case who == nil:
		return "user"
	case who.Hook:
		return "hook"
	case who.Session == "":
		return "stage"
	}
	return "stage:" + who.Session
}

// render returns the lines of both rings, oldest first.
func (l *ErrorLog) render() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := make([]byte, 0, l.user.bytes+l.stages.bytes)
	u, s := l.user.ordered(), l.stages.ordered()
	for len(u) > 0 || len(s) > 0 {
		if len(s) == 0 || len(u) > 0 && u[0].seq < s[0].seq {
			b, u = append(b, u[0].line...), u[1:]
		} else {
			b, s = append(b, s[0].line...), s[1:]
		}
	}
	return b, nil
}

// size is the file's length for stat: true, and cheap.
func (l *ErrorLog) size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.user.bytes + l.stages.bytes)
}

type entry struct {
	seq  uint64
	line string
}

// ring is the last ErrorLogSize entries; once full, next is the oldest.
type ring struct {
	e     []entry
	next  int
	bytes int
}

func (r *ring) add(e entry) {
	r.bytes += len(e.line)
	if len(r.e) < ErrorLogSize {
		r.e = append(r.e, e)
		return
	}
	r.bytes -= len(r.e[r.next].line)
	r.e[r.next] = e
	r.next = (r.next + 1) % ErrorLogSize
}

func (r *ring) ordered() []entry {
	return append(r.e[r.next:len(r.e):len(r.e)], r.e[:r.next]...)
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

const errorsDoc = "Recent errors of opens, writes, commits (fsync, close) and closes through the tree, oldest first (the last 100 of the user's, and of model code's): time who op path: message, redacted. What a shell shows only as an errno (Invalid argument) is explained here."

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
