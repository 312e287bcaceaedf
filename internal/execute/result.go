package execute

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Result is what a call produced.
type Result struct {
	// Output is the last stage's stdout or, when a stage failed, that
	// stage's stdout so far; cut to the configured size, head and tail.
	Output []byte
	// Size is the full size of that output; Saved, when not empty, is the
	// file in the session's tmp directory that holds all of it (when it
	// was cut, or is binary).
	Size   int64
	Saved  string
	Binary bool

	Failed   bool
	Stage    string // the failing stage: "2", or "3.1" for a branch
	Label    string // its language, "tool NAME" or "parallel"
	ExitCode int    // its exit status; -1 when it was killed
	Reason   string // "exited with status 1", "timed out after 10s", ...
	Stderr   string // its stderr, head and tail
	TimedOut bool

	// Notes are what the stages that succeeded wrote to stderr: warnings,
	// test summaries, progress, a failing command inside a pipeline that
	// succeeded. The model sees them after the output, cut to noteKeep.
	Notes []Note

	Duration time.Duration
}

// A Note is the stderr of a stage that succeeded.
type Note struct {
	Stage, Label, Stderr string
}

// noteKeep bounds the stderr of one stage that succeeded, head and tail:
// it costs tokens on every call, and the failing stage's stderr, which
// matters most, has its own larger share.
const noteKeep = 1 << 10

// String is the text the model reads.
func (r *Result) String() string {
	var b strings.Builder
	switch {
	case r.Binary:
		fmt.Fprintf(&b, "[binary output: %d bytes, saved in %s]\n", r.Size, r.Saved)
	case len(r.Output) == 0 && !r.Failed:
		b.WriteString("[no output]\n")
	default:
		b.Write(r.Output)
		if len(r.Output) > 0 && r.Output[len(r.Output)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	for _, n := range r.Notes {
		s := n.Stderr
		if len(s) > 2*noteKeep {
			s = cutMark(string(trimEnd([]byte(s[:noteKeep]))), string(trimStart([]byte(s[len(s)-noteKeep:]))), int64(len(s)-2*noteKeep), "")
		}
		fmt.Fprintf(&b, "stderr of stage %s (%s):\n%s\n", n.Stage, n.Label, s)
	}
	if r.Failed {
		fmt.Fprintf(&b, "error: stage %s (%s) %s", r.Stage, r.Label, r.Reason)
		if r.TimedOut && r.Size > 0 {
			b.WriteString("; its output so far is above")
		}
		b.WriteByte('\n')
		if s := strings.TrimRight(r.Stderr, "\n"); s != "" {
			fmt.Fprintf(&b, "stderr:\n%s\n", s)
		}
	}
	return b.String()
}

// result turns the outcome that ended the call into a Result, saving the
// full output when the model cannot be shown all of it.
func (r *run) result(o *outcome) *Result {
	res := &Result{Size: o.stdout.Len()}
	if o.failed() {
		res.Failed, res.ExitCode, res.TimedOut = true, o.exit, o.timedOut
		res.Stage, res.Label = o.job.id, o.job.label
		res.Reason = o.reason()
		res.Stderr = o.stderr.String()
	}
	limit := int64(r.e.o.Sandbox.MaxResult)
	head := o.stdout.Bytes(0, limit+1)
	res.Binary = bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(trimEnd(head))
	if !res.Binary && res.Size <= limit {
		res.Output = head
		return res
	}
	saved, err := r.save(o.stdout)
	if err != nil {
		saved = "(not saved: " + err.Error() + ")"
	}
	res.Saved = saved
	if res.Binary {
		return res
	}
	h := trimEnd(o.stdout.Bytes(0, limit/2))
	t := trimStart(o.stdout.Bytes(res.Size-limit/2, limit/2))
	if bytes.IndexByte(t, 0) >= 0 || !utf8.Valid(t) {
		res.Binary = true
		return res
	}
	res.Output = []byte(cutMark(string(h), string(t), res.Size-int64(len(h)+len(t)), saved))
	return res
}

func (o *outcome) reason() string {
	switch {
	case o.err != nil:
		return "could not start: " + o.err.Error()
	case o.denied != "":
		return o.denied
	case o.timedOut:
		return fmt.Sprintf("timed out after %v", o.limit)
	case o.stopped:
		return "was interrupted"
	case o.tooLarge:
		return "wrote more output than the limit allows"
	case o.sig != 0:
		return "was killed by signal " + o.sig.String()
	}
	return fmt.Sprintf("exited with status %d", o.exit)
}

// save copies the whole output into a new file in the session's tmp
// directory and returns its path.
func (r *run) save(s *spool) (string, error) {
	name := "exec-" + time.Now().Format("20060102-150405") + "-*.out"
	f, err := os.CreateTemp(r.spec.Tmp, name)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, s.Reader()); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return filepath.Clean(f.Name()), nil
}

// cutMark joins a head and a tail around a note saying what was left out.
func cutMark(head, tail string, cut int64, saved string) string {
	note := fmt.Sprintf("\n[... %d bytes cut ...]\n", cut)
	if saved != "" {
		note = fmt.Sprintf("\n[... %d bytes cut; the full output is in %s ...]\n", cut, saved)
	}
	return head + note + tail
}

// trimEnd drops a rune cut in two at the end of b.
func trimEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if r, _ := utf8.DecodeRune(b[len(b)-i:]); r == utf8.RuneError && !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// trimStart drops the continuation bytes of a rune cut in two at the
// start of b.
func trimStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
