// Package shell is ollie's interactive front-end, `ollie sh` (and the
// script s/sh). It is a client of the mounted tree like any other: it
// reads and writes the files of a session directory and nothing else.
//
//	ask        echo text > s/<id>/prompt, then follow chat from where it
//	           was until s/<id>/wait returns; show s/<id>/usage after
//	Ctrl-C     echo stop > s/<id>/ctl while a turn runs
//	/cmd       ctl commands, cfg, usage, cost, s/new, s/idx, fifo.in
//	!cmd       sh -c cmd in the session's cwd with its env file
//
// A session is chosen once at start: -s SESSION, else the newest one
// working in the current directory, else (or with -new) a new one there.
package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
)

// Options configure Run.
type Options struct {
	Mount          string // where the tree is mounted
	Cwd            string // the directory new sessions work in
	New            bool   // start a new session even if one works in Cwd
	Session        string // the session to use (id, name, path)
	Model, Backend string // for new sessions; "" the defaults
	History        string // file of the line history; "" keeps none
	Environ        []string
	Stdin          *os.File
	Stdout, Stderr *os.File
}

// Shell is one interactive run.
type Shell struct {
	o     Options
	t     *tree
	in    lineReader
	out   io.Writer
	color bool
	sigc  chan os.Signal
	done  <-chan struct{} // closed when the shell must end (SIGTERM)

	id   string    // the current session
	seen int64     // bytes of its chat already shown
	r    *renderer // renders that chat

	interrupts int // Ctrl-C in a row at an empty prompt
}

// lineReader reads the user's lines: readline on a terminal, plain lines
// otherwise.
type lineReader interface {
	Readline() (string, error) // readline.ErrInterrupt on Ctrl-C, io.EOF at the end
	SetPrompt(string)
	Close() error
	// Interrupt makes a Readline in progress, or the next, return
	// readline.ErrInterrupt, as a Ctrl-C typed at the prompt does.
	Interrupt()
}

// ttyReader is readline on a terminal, reading its keys from keys.
type ttyReader struct {
	*readline.Instance
	keys *keyInput
}

// Interrupt gives readline the Ctrl-C that the terminal, not raw between
// two lines (readline makes it raw only while it reads one), turned
// into a SIGINT.
func (r ttyReader) Interrupt() { r.keys.interrupt() }

// keyInput is what readline reads: the terminal's bytes, and a Ctrl-C
// put in by interrupt. (readline's own WriteStdin is read only after the
// terminal's next key.) Like readline, it reads one chunk of the terminal
// ahead at most, so a !command run in between gets the keys typed for it.
type keyInput struct {
	keys chan []byte   // from the terminal; closed at its end
	intr chan struct{} // a Ctrl-C to give
	done chan struct{} // closed by Close
	once sync.Once
	rest []byte // of the last chunk, not yet read
	err  error  // why keys was closed
}

func newKeyInput(tty io.Reader) *keyInput {
	k := &keyInput{keys: make(chan []byte), intr: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		for {
			b := make([]byte, 256)
			n, err := tty.Read(b)
			if n > 0 {
				select {
				case k.keys <- b[:n]:
				case <-k.done:
					return
				}
			}
			if err != nil {
				k.err = err
				close(k.keys)
				return
			}
		}
	}()
	return k
}

// Read is called by readline's one reader goroutine.
func (k *keyInput) Read(p []byte) (int, error) {
	if len(k.rest) == 0 {
		select {
		case b, ok := <-k.keys:
			if !ok {
				return 0, k.err
			}
			k.rest = b
		case <-k.intr:
			k.rest = []byte{3}
		case <-k.done:
			return 0, io.EOF
		}
	}
	n := copy(p, k.rest)
	k.rest = k.rest[n:]
	return n, nil
}

// Close ends Read (readline closes its input when it is closed).
func (k *keyInput) Close() error {
	k.once.Do(func() { close(k.done) })
	return nil
}

func (k *keyInput) interrupt() {
	select {
	case k.intr <- struct{}{}:
	default: // one is waiting already
	}
}

// Run runs the shell until the user leaves or ctx is done.
func Run(ctx context.Context, o Options) error {
	t, err := openTree(o.Mount)
	if err != nil {
		return err
	}
	sh := &Shell{o: o, t: t, out: o.Stdout, sigc: make(chan os.Signal, 1), done: ctx.Done()}
	made := false
	id := ""
	switch {
	case o.Session != "":
		id, err = t.resolve(o.Session)
	case !o.New:
		id, err = t.lastIn(o.Cwd)
	}
	if err == nil && id == "" {
		id, err = t.newSession(o.Cwd, o.Model, o.Backend)
		made = true
	}
	if err != nil {
		return err
	}
	if err := sh.openInput(); err != nil {
		return err
	}
	defer sh.in.Close()
	// Ctrl-C while a turn runs (the terminal is not raw then) stops the
	// turn; at the prompt readline sees it as a key.
	signal.Notify(sh.sigc, os.Interrupt)
	defer signal.Stop(sh.sigc)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			sh.in.Close() // restores the terminal; Readline returns
		case <-done:
		}
	}()
	if err := sh.attach(id, made); err != nil {
		return err
	}
	return sh.loop(ctx)
}

func (sh *Shell) openInput() error {
	o := sh.o
	if !readline.IsTerminal(int(o.Stdin.Fd())) {
		sh.in = &plainReader{r: bufio.NewReader(o.Stdin)}
		return nil
	}
	sh.color = readline.IsTerminal(int(o.Stdout.Fd()))
	if o.History != "" {
		if err := os.MkdirAll(filepath.Dir(o.History), 0700); err != nil {
			return err
		}
	}
	items := make([]readline.PrefixCompleterInterface, 0, len(commands))
	for _, c := range commands {
		items = append(items, readline.PcItem("/"+c.name))
	}
	keys := newKeyInput(o.Stdin)
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          "> ",
		HistoryFile:     o.History,
		HistoryLimit:    1000,
		InterruptPrompt: "^C",
		EOFPrompt:       "",
		AutoComplete:    readline.NewPrefixCompleter(items...),
		Stdin:           keys,
		Stdout:          o.Stdout,
		Stderr:          o.Stderr,
	})
	if err != nil {
		return err
	}
	sh.in = ttyReader{rl, keys}
	return nil
}

func (sh *Shell) loop(ctx context.Context) error {
	for {
		sh.catchUp()
		line, err := sh.readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			if line != "" {
				sh.interrupts = 0
				continue
			}
			sh.interrupts++
			if sh.interrupts >= 2 {
				return nil
			}
			fmt.Fprintln(sh.out, "(Ctrl-C again or Ctrl-D to leave; the session stays)")
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		sh.interrupts = 0
		if _, plain := sh.in.(*plainReader); plain && line != "" {
			sh.r.styled(dim, "> "+line) // a script's lines, for its transcript
		}
		if sh.do(strings.TrimRight(line, " \t\r")) {
			return nil
		}
	}
}

// readline reads a line. A Ctrl-C at the prompt is a key to readline
// while it reads, but a SIGINT while the shell draws (catching up on the
// chat, saying how to leave): both count, so Ctrl-C twice always leaves.
func (sh *Shell) readline() (string, error) {
	read := make(chan struct{})
	defer close(read)
	go func() {
		select {
		case <-sh.sigc:
			sh.in.Interrupt()
		case <-read:
		}
	}()
	return sh.in.Readline()
}

// do runs one line; it reports whether the user is leaving.
func (sh *Shell) do(line string) bool {
	switch {
	case strings.TrimSpace(line) == "":
		if st, _ := sh.t.read("s", sh.id, "state"); busy(st) {
			sh.follow()
		}
	case strings.HasPrefix(line, "!"):
		sh.local(strings.TrimSpace(line[1:]))
	case strings.HasPrefix(line, "//"):
		sh.ask(line[1:])
	case strings.HasPrefix(line, "/"):
		return sh.command(line[1:])
	default:
		sh.ask(line)
	}
	return false
}

// ask submits a prompt and follows the turn it starts.
func (sh *Shell) ask(text string) {
	sh.catchUp()
	if err := sh.t.write(text+"\n", "s", sh.id, "prompt"); err != nil {
		sh.errorf("%v", err)
		return
	}
	sh.r.skip = true // the prompt is on the screen already
	sh.follow()
}

// attach makes id the current session: a line about it and, for one
// that was there before, its last exchange; a running turn is followed.
func (sh *Shell) attach(id string, made bool) error {
	cfg, err := sh.t.read("s", id, "cfg")
	if err != nil {
		return err
	}
	c := kv(cfg, "=")
	sh.id = id
	sh.r = &renderer{w: sh.out, color: sh.color, width: readline.GetScreenWidth, maxOutput: 4}
	how := "resumed"
	if made {
		how = "new"
	}
	sh.note("session %s (%s) in %s, model %s; /help for help", sessionLabel(c), how, c["cwd"], sh.modelInUse(id, c["model"]))
	sh.in.SetPrompt(shortName(c) + "> ")
	fi, err := os.Stat(sh.t.path("s", id, "chat"))
	if err != nil {
		sh.seen = 0
		return nil
	}
	sh.seen = fi.Size()
	if !made && sh.seen > 0 {
		sh.lastExchange()
	}
	if busy(c["state"]) {
		sh.follow()
	} else {
		sh.notePaused()
	}
	return nil
}

// notePaused says when the session's work waits for `ctl resume` after a
// restart of the daemon: a turn cut by it, or prompts queued before it.
// wait says so at once when no turn runs.
func (sh *Shell) notePaused() {
	w, err := sh.t.read("s", sh.id, "wait")
	switch {
	case err != nil || !strings.Contains(w, "ctl resume"):
	case strings.Contains(w, "interrupted by restart"):
		sh.note("the last turn was cut by a restart of the daemon and waits: /resume continues it (then the queued prompts); a new prompt starts afresh instead")
	default:
		sh.note("prompts queued before a restart of the daemon wait: /resume runs them; a new prompt runs first")
	}
}

// lastExchange shows the last prompt and what followed it.
func (sh *Shell) lastExchange() {
	prev, _ := sh.t.read("s", sh.id, "prompt.prev")
	off, _ := sh.t.read("s", sh.id, "offset")
	var from int64
	if _, err := fmt.Sscan(off, &from); err != nil || from > sh.seen {
		return
	}
	if first, _, _ := strings.Cut(strings.TrimSpace(prev), "\n"); first != "" {
		sh.r.styled(dim, "» "+sh.r.fit(first, 2))
	}
	end := sh.seen
	sh.seen = from
	sh.drainTo(end)
	sh.r.Flush()
}

// follow shows the chat as it grows until the session settles: idle
// with nothing queued, or stopped by an error. Ctrl-C stops the turn.
func (sh *Shell) follow() {
	for len(sh.sigc) > 0 { // a Ctrl-C from before (of a !cmd) is not for this turn
		<-sh.sigc
	}
	f, err := os.Open(sh.t.path("s", sh.id, "chat"))
	if err != nil {
		sh.errorf("%v", treeErr(err))
		return
	}
	defer f.Close()
	waitc := make(chan string, 1)
	id := sh.id
	go func() {
		w, err := sh.t.read("s", id, "wait")
		if err != nil {
			w = "error: " + err.Error()
		}
		waitc <- w
	}()
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			sh.drain(f)
		case <-sh.sigc:
			sh.r.col = 1 // the terminal echoed ^C: start the next line afresh
			go func() {
				// Not through the renderer: this runs beside the loop.
				if err := sh.t.write("stop\n", "s", id, "ctl"); err != nil {
					fmt.Fprintf(sh.o.Stderr, "error: stop: %v\n", err)
				}
			}()
		case w := <-waitc:
			sh.drain(f)
			sh.r.Flush()
			sh.status(strings.TrimSpace(w))
			return
		case <-sh.done:
			sh.r.Flush()
			return
		}
	}
}

// catchUp shows what the chat gained since it was last shown (by other
// clients, or a queued turn).
func (sh *Shell) catchUp() {
	fi, err := os.Stat(sh.t.path("s", sh.id, "chat"))
	if err != nil || fi.Size() <= sh.seen {
		return
	}
	sh.drainTo(fi.Size())
	sh.r.Flush()
}

func (sh *Shell) drainTo(end int64) {
	f, err := os.Open(sh.t.path("s", sh.id, "chat"))
	if err != nil {
		return
	}
	defer f.Close()
	for sh.seen < end {
		if sh.drain(f) == 0 {
			return
		}
	}
}

// drain renders what f holds past seen and returns how much it was.
func (sh *Shell) drain(f *os.File) int64 {
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := f.ReadAt(buf, sh.seen)
		if n > 0 {
			sh.r.Write(buf[:n])
			sh.seen += int64(n)
			total += int64(n)
		}
		if n < len(buf) || err != nil {
			return total
		}
	}
}

// status is the line after a turn: how it ended, and the session's use.
func (sh *Shell) status(wait string) {
	u := kv(mustRead(sh.t, "s", sh.id, "usage"), " ")
	parts := []string{wait}
	if u["requests"] != "" {
		parts = append(parts, u["requests"]+" requests", u["input"]+" in", u["output"]+" out")
	}
	if c := kv(mustRead(sh.t, "s", sh.id, "cost"), " "); c["session"] != "" && c["session"] != "0" {
		parts = append(parts, "$"+c["session"])
	}
	style := dim
	if !strings.HasPrefix(wait, "idle") {
		style = red
	}
	sh.r.styled(style, "["+strings.Join(parts, " · ")+"]")
}

// local runs a command line with sh in the session's directory, with the
// variables of its env file. Secret values never come through the tree,
// so those variables are left out.
func (sh *Shell) local(cmdline string) {
	if cmdline == "" {
		sh.errorf("usage: !command")
		return
	}
	c := kv(mustRead(sh.t, "s", sh.id, "cfg"), "=")
	env := append([]string(nil), sh.o.Environ...)
	for _, line := range strings.Split(mustRead(sh.t, "s", sh.id, "env"), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" && v != "(secret)" {
			env = append(env, k+"="+v)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Dir, cmd.Env = c["cwd"], env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sh.o.Stdin, sh.o.Stdout, sh.o.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		sh.r.styled(dim, fmt.Sprintf("[exit %d]", ee.ExitCode()))
	case err != nil:
		sh.errorf("%v", err)
	}
}

func (sh *Shell) note(format string, args ...any) {
	sh.r.newline()
	sh.r.styled(dim, fmt.Sprintf(format, args...))
}

func (sh *Shell) errorf(format string, args ...any) {
	if sh.r == nil {
		fmt.Fprintf(sh.out, "error: "+format+"\n", args...)
		return
	}
	sh.r.newline()
	sh.r.styled(red, "error: "+fmt.Sprintf(format, args...))
}

func mustRead(t *tree, elem ...string) string {
	s, _ := t.read(elem...)
	return s
}

func busy(state string) bool {
	st := strings.TrimSpace(state)
	return st != "" && st != "idle" && st != "error"
}

// sessionLabel is "id" or "id (name)".
func sessionLabel(c map[string]string) string {
	if c["name"] != "" {
		return c["id"] + " (" + c["name"] + ")"
	}
	return c["id"]
}

// shortName is the name, or the random end of the id, for the prompt.
func shortName(c map[string]string) string {
	if c["name"] != "" {
		return c["name"]
	}
	id := c["id"]
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// modelInUse is the model the session is set to, else the one s/idx says
// it uses (its agent's or its backend's), else "(default)".
func (sh *Shell) modelInUse(id, set string) string {
	if set != "" {
		return set
	}
	if es, err := sh.t.sessions(); err == nil {
		for _, e := range es {
			if e.id == id && e.model != "-" && e.model != "" {
				return e.model
			}
		}
	}
	return "(default)"
}

func orDefault(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}

// plainReader reads lines when standard input is not a terminal, so
// `ollie sh < script` runs a script of lines.
type plainReader struct{ r *bufio.Reader }

func (p *plainReader) Readline() (string, error) {
	s, err := p.r.ReadString('\n')
	if err != nil && s == "" {
		return "", io.EOF
	}
	return strings.TrimRight(s, "\r\n"), nil
}

func (p *plainReader) SetPrompt(string) {}
func (p *plainReader) Close() error     { return nil }
func (p *plainReader) Interrupt()       {} // a script's lines: a SIGINT stops turns only
