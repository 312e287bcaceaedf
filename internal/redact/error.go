package redact

import (
	"io"
	"log"
)

// Error returns err with its text redacted. The result keeps err's chain
// (errors.Is, errors.As and errs.KindOf see what they saw before); an
// error whose text holds no secret is returned as is.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := err.(*redacted); ok && re.r == r {
		return err
	}
	text := err.Error()
	clean := r.String(text)
	if clean == text {
		return err
	}
	return &redacted{text: clean, err: err, r: r}
}

// redacted is an error whose text was cleaned. Unwrap gives the original
// for errors.Is and errors.As; its text must not be shown.
type redacted struct {
	text string
	err  error
	r    *Redactor
}

func (e *redacted) Error() string { return e.text }
func (e *redacted) Unwrap() error { return e.err }

// Writer returns a writer that redacts what it passes to w. Each Write is
// redacted on its own: a log.Logger writes one whole line per call.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if rw, ok := w.(*writer); ok && rw.r == r {
		return w
	}
	return &writer{w: w, r: r}
}

type writer struct {
	w io.Writer
	r *Redactor
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Logger returns a logger like l (nil: the standard logger) whose every
// line goes through r. A logger already redacted by r is returned as is.
func (r *Redactor) Logger(l *log.Logger) *log.Logger {
	if l == nil {
		l = log.Default()
	}
	if rw, ok := l.Writer().(*writer); ok && rw.r == r {
		return l
	}
	return log.New(r.Writer(l.Writer()), l.Prefix(), l.Flags())
}
