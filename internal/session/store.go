package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"ollie.dev/ollie/internal/durable"
)

// Meta is what meta.json holds: the identity and settings of a session.
type Meta struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Agent   string    `json:"agent"`
	Backend string    `json:"backend,omitempty"` // "" = the agent's or the first configured
	Model   string    `json:"model,omitempty"`   // "" = the agent's or the backend's default
	Cwd     string    `json:"cwd"`
	Created time.Time `json:"created"`
	Params  Params    `json:"params"`
	// Parent is the batch job or session that spawned this one, if any.
	Parent string `json:"parent,omitempty"`
	// Sandbox is a narrower policy imposed by a parent; "" = the agent's.
	Sandbox string `json:"sandbox,omitempty"`
}

// Params are the per-session overrides of the agent configuration.
type Params struct {
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	MaxSteps    int      `json:"max_steps,omitempty"`
}

// Usage is the running total of a session's model use.
type Usage struct {
	Input      int     `json:"input"`
	Output     int     `json:"output"`
	CacheRead  int     `json:"cache_read"`
	CacheWrite int     `json:"cache_write"`
	Requests   int     `json:"requests"`
	Estimated  bool    `json:"estimated,omitempty"`
	Cost       float64 `json:"cost_usd"`      // whole session
	TurnCost   float64 `json:"turn_cost_usd"` // last turn
	CostKnown  bool    `json:"cost_known,omitempty"`
	Context    int     `json:"context"` // tokens the last request occupied
	Window     int     `json:"window"`  // context window of the model, 0 if unknown
}

// writeAtomic replaces name with data durably: temp file, fsync, rename,
// fsync of the directory.
func writeAtomic(name string, data []byte, perm os.FileMode) error {
	return replaceFile(name, data, perm, true)
}

// replaceFile replaces name with data atomically (a reader or a crash of
// the daemon sees the old or the new content, never a mix); with sync it
// also survives a crash of the machine, at the price of two fsyncs.
func replaceFile(name string, data []byte, perm os.FileMode, sync bool) error {
	if err := durable.Replace(name, data, perm, sync); err != nil || !sync {
		return err
	}
	return syncPath(filepath.Dir(name))
}

// syncHook, if set (by a test), is told of each syncPath first.
var syncHook func(path string)

// syncPath fsyncs the file or directory at path.
func syncPath(path string) error {
	if syncHook != nil {
		syncHook(path)
	}
	return durable.Sync(path)
}

func writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return err
	}
	return writeAtomic(name, append(b, '\n'), 0600)
}

func readJSON(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// logs are a session's append-only files (chat, context.jsonl,
// events.jsonl) and its usage record, in its directory. From a session's
// first turn on they stay open (keep), so that a turn opens no file:
// creating and opening files is what costs most in a turn on ext4; until
// then, and after close, each write opens its file for the one write.
//
// logs has no lock of its own: the session's lock guards it.
type logs struct {
	dir    string
	open   map[string]*appendFile // nil: not kept open
	usageF *os.File               // usage.json, kept open with the logs
}

// kept names the logs keep opens.
var kept = []string{"chat", "context.jsonl", "events.jsonl"}

// write appends b to the log name, and fsyncs it when durable is set.
func (l *logs) write(name string, b []byte, durable bool) error {
	if a := l.open[name]; a != nil {
		return a.write(b, durable)
	}
	a, err := openAppend(filepath.Join(l.dir, name))
	if err != nil {
		return err
	}
	if l.open != nil {
		l.open[name] = a
		return a.write(b, durable)
	}
	defer a.close()
	return a.write(b, durable)
}

// keep opens the logs and keeps them open until close.
func (l *logs) keep() {
	if l.open == nil {
		l.open = map[string]*appendFile{}
	}
	for _, name := range kept {
		if l.open[name] != nil {
			continue
		}
		if a, err := openAppend(filepath.Join(l.dir, name)); err == nil {
			l.open[name] = a
		}
	}
}

// isOpen reports whether the logs are kept open.
func (l *logs) isOpen() bool { return l.open != nil }

// close closes the logs kept open; later writes open them again.
func (l *logs) close() {
	for _, a := range l.open {
		a.close()
	}
	l.open = nil
	if l.usageF != nil {
		l.usageF.Close()
		l.usageF = nil
	}
}

// sync makes everything written to the open logs durable (a log not kept
// open was synced or not at its write, as that asked).
func (l *logs) sync() error {
	for _, a := range l.open {
		if err := a.sync(); err != nil {
			return err
		}
	}
	return nil
}

// reopen closes the open log name, which is about to be replaced by a new
// file; the next write opens the new one.
func (l *logs) reopen(name string) {
	if a := l.open[name]; a != nil {
		a.close()
		delete(l.open, name)
	}
}

// usageSize is the fixed size of usage.json. The file is rewritten in
// place with one pwrite of the whole record, padded with blanks: no
// rename (which costs an ext4 journal flush per turn), and a kill of the
// daemon cannot tear a single write.
const usageSize = 1024

// saveUsage writes the usage record.
func (l *logs) saveUsage(u Usage) error {
	b, _ := json.Marshal(u)
	name := filepath.Join(l.dir, "usage.json")
	if len(b) >= usageSize {
		return replaceFile(name, b, 0600, false)
	}
	rec := make([]byte, usageSize)
	copy(rec, b)
	for i := len(b); i < usageSize-1; i++ {
		rec[i] = ' '
	}
	rec[usageSize-1] = '\n'
	f := l.usageF
	if f == nil {
		var err error
		if f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0600); err != nil {
			return err
		}
		if l.open != nil {
			l.usageF = f
		} else {
			defer f.Close()
		}
	}
	_, err := f.WriteAt(rec, 0)
	return err
}

func loadUsage(name string, u *Usage) {
	b, err := os.ReadFile(name)
	if err != nil {
		return
	}
	json.Unmarshal(bytes.TrimRight(b, " \n\x00"), u)
}

// appendFile is an append-only log file.
type appendFile struct {
	f    *os.File
	size atomic.Int64
}

func openAppend(name string) (*appendFile, error) {
	records := strings.HasSuffix(name, ".jsonl")
	flag := os.O_WRONLY
	if records {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(name, flag|os.O_CREATE|os.O_APPEND, 0600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := fi.Size()
	if records {
		if size, err = cutTorn(f, size); err != nil {
			f.Close()
			return nil, err
		}
	}
	a := &appendFile{f: f}
	a.size.Store(size)
	return a, nil
}

// cutTorn truncates a log of records, one a line, of size bytes, after
// its last newline, and returns its new size. Each record is appended
// with its newline in one write, so bytes after the last newline are a
// record torn by a crash, which was never acknowledged (the write that
// acknowledges is fsync'd whole). Left there, the next record would be
// appended to it, and the two read as one corrupt line.
func cutTorn(f *os.File, size int64) (int64, error) {
	var buf [4096]byte
	end := size
	for end > 0 {
		n := int64(len(buf))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end == size {
		return size, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, err
	}
	return end, f.Sync()
}

// write appends b, and fsyncs it when durable is set.
func (a *appendFile) write(b []byte, durable bool) error {
	n, err := a.f.Write(b)
	a.size.Add(int64(n))
	if err == nil && durable {
		err = a.f.Sync()
	}
	return err
}

func (a *appendFile) sync() error { return a.f.Sync() }

func (a *appendFile) close() error {
	if a == nil {
		return nil
	}
	return a.f.Close()
}

// saveUsageLocked writes the usage record; a failure costs only the
// record (the totals are in memory and in the events), so it is logged.
func (s *Session) saveUsageLocked() {
	if err := s.logs.saveUsage(s.usage); err != nil {
		s.m.logf("session %s: usage: %v", s.id, err)
	}
}
