package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ollie.dev/ollie/internal/session"
)

// waitSpares waits until m has n spares ready, and returns them.
func waitSpares(t *testing.T, m *session.Manager, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sp := m.Spares()
		if len(sp) == n {
			return sp
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spares ready, want %d", len(sp), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// onDisk lists the names in dir that start with .spare-.
func sparesOnDisk(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".spare-") {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(names)
	return names
}

func TestSessionMadeFromASpare(t *testing.T) {
	dir := t.TempDir()
	m, err := session.Open(session.Options{Dir: filepath.Join(dir, "s"), TrDir: filepath.Join(dir, "tr"), Runner: newRunner(), Spares: 2})
	if err != nil {
		t.Fatal(err)
	}
	before := waitSpares(t, m, 2)
	s, err := m.New(session.Spec{Cwd: t.TempDir(), Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, d := range before {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			taken++
		}
	}
	if taken != 1 {
		t.Fatalf("%d of the spares %v taken by New", taken, before)
	}
	for _, name := range append(session.SpareFiles, "tmp") {
		if _, err := os.Lstat(filepath.Join(s.Dir(), name)); err != nil {
			t.Errorf("the session has no %s from its spare: %v", name, err)
		}
	}
	if err := s.Submit("hello"); err != nil {
		t.Fatal(err)
	}
	if st, e := wait(t, s); st != session.Idle {
		t.Fatalf("state %s %s", st, e)
	}
	want := chat(t, s)
	if !strings.Contains(want, "hello") {
		t.Fatalf("chat %q", want)
	}
	waitSpares(t, m, 2) // made again, once left alone
	m.Close()

	_, again := reload(t, dir, s.ID())
	if got := chat(t, again); got != want {
		t.Errorf("chat after a restart %q, want %q", got, want)
	}
	if meta := again.Meta(); meta.Name != "first" || meta.ID != s.ID() {
		t.Errorf("meta after a restart %+v", meta)
	}
}

// A session made from a spare and never prompted is whole after a
// restart: its empty files read as a session without turns.
func TestUnpromptedSpareSessionReloads(t *testing.T) {
	dir := t.TempDir()
	m, err := session.Open(session.Options{Dir: filepath.Join(dir, "s"), TrDir: filepath.Join(dir, "tr"), Runner: newRunner(), Spares: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitSpares(t, m, 1)
	s := newIn(t, m)
	if len(m.Spares()) != 0 {
		t.Fatal("the spare was not taken")
	}
	m.Close()
	_, again := reload(t, dir, s.ID())
	if st, _ := again.State(); st != session.Idle {
		t.Errorf("state %s", st)
	}
	if u := again.Usage(); u != (session.Usage{}) {
		t.Errorf("usage %+v", u)
	}
	if err := again.Submit("after"); err != nil {
		t.Fatal(err)
	}
	if st, e := wait(t, again); st != session.Idle || !strings.Contains(chat(t, again), "after") {
		t.Errorf("state %s %s, chat %q", st, e, chat(t, again))
	}
}

// What carries a spare's name on disk is used only if it is exactly a
// spare as made: anything else (half made, its meta.json written by a
// New a crash cut short, or changed by hand) is removed at Open, and
// never becomes a session's directory. So is one whose modes are not those
// it was made with.
func TestSparesOnDiskCheckedAtOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if err := os.MkdirAll(dir, 0700); err != nil {
		t.Fatal(err)
	}
	spare := func() string {
		d, err := session.MakeSpare(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	good := []string{spare(), spare()}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0600); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(d string) error{
		"meta written": func(d string) error { return os.WriteFile(filepath.Join(d, "meta.json"), []byte(`{"id":"x"}`), 0600) },
		"file missing": func(d string) error { return os.Remove(filepath.Join(d, "systemprompt")) },
		"file added":   func(d string) error { return os.WriteFile(filepath.Join(d, "plan"), nil, 0600) },
		"chat a link": func(d string) error {
			os.Remove(filepath.Join(d, "chat"))
			return os.Symlink(outside, filepath.Join(d, "chat"))
		},
		"chat a fifo": func(d string) error {
			os.Remove(filepath.Join(d, "chat"))
			return unix.Mkfifo(filepath.Join(d, "chat"), 0600)
		},
		"tmp not empty": func(d string) error { return os.WriteFile(filepath.Join(d, "tmp", "x"), nil, 0600) },
		"tmp a file": func(d string) error {
			os.Remove(filepath.Join(d, "tmp"))
			return os.WriteFile(filepath.Join(d, "tmp"), nil, 0600)
		},
		// As made while the umask was 0177 (daemon.listenUnix did that):
		// a stage could not enter the session's directory.
		"directory 0600": func(d string) error { return os.Chmod(d, 0600) },
		"tmp 0600":       func(d string) error { return os.Chmod(filepath.Join(d, "tmp"), 0600) },
		"chat 0644":      func(d string) error { return os.Chmod(filepath.Join(d, "chat"), 0644) },
	}
	for what, spoil := range bad {
		if err := spoil(spare()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".spare-file"), nil, 0600); err != nil {
		t.Fatal(err)
	}

	m, err := session.Open(session.Options{Dir: dir, TrDir: t.TempDir(), Spares: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := m.Spares()
	sort.Strings(got)
	sort.Strings(good)
	if strings.Join(got, " ") != strings.Join(good, " ") {
		t.Fatalf("spares kept %v, want %v", got, good)
	}
	if on := sparesOnDisk(t, dir); strings.Join(on, " ") != strings.Join(good, " ") {
		t.Fatalf("on disk %v, want only %v", on, good)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("a link's target: %q %v", b, err)
	}
	waitSpares(t, m, 3)
	m.Close()

	// A daemon that keeps none removes them all.
	m, err = session.Open(session.Options{Dir: dir, TrDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if on := sparesOnDisk(t, dir); len(on) != 0 || len(m.Spares()) != 0 {
		t.Errorf("spares %v left on disk, %v ready, with none wanted", on, m.Spares())
	}
}

// A spare is renamed to a session's id only where nothing is: an empty
// directory there (which rename(2) would replace) is left alone.
func TestSpareNeverReplacesADirectory(t *testing.T) {
	dir := t.TempDir()
	d, err := session.MakeSpare(dir)
	if err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(dir, "aaaaaa-bbbbb")
	if err := os.Mkdir(taken, 0700); err != nil {
		t.Fatal(err)
	}
	if err := session.Adopt(d, taken, []byte("{}\n")); !errors.Is(err, os.ErrExist) {
		t.Fatalf("adopt onto an empty directory: %v", err)
	}
	if ents, err := os.ReadDir(taken); err != nil || len(ents) != 0 {
		t.Errorf("the directory there has %v %v", ents, err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Errorf("the spare is gone: %v", err)
	}
}

// Close stops the making of spares: none appears after it.
func TestCloseStopsTheSpares(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m, err := session.Open(session.Options{Dir: dir, TrDir: t.TempDir(), Spares: 3})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	time.Sleep(300 * time.Millisecond) // 3× the delay of a fill
	if on := sparesOnDisk(t, dir); len(on) != 0 {
		t.Errorf("spares %v made after Close", on)
	}
}

// A burst of new sessions takes the spares there are, and the rest are
// made directly: no spare is made while it goes on (which would pay for
// files its sessions may never use), and the spares are back after it.
func TestSparesWaitForABurstToEnd(t *testing.T) {
	dir := t.TempDir()
	m, err := session.Open(session.Options{Dir: filepath.Join(dir, "s"), TrDir: filepath.Join(dir, "tr"), Spares: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	waitSpares(t, m, 2)
	fromSpares, made := 0, 0
	for start := time.Now(); time.Since(start) < 4*100*time.Millisecond; made++ { // 4 fill delays
		s, err := m.New(session.Spec{Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(s.Dir(), "chat")); err == nil {
			fromSpares++ // a session made directly has no chat yet
		}
	}
	// Two, and one more only if the machine stalled for the whole delay
	// of a fill between two of them.
	if fromSpares < 2 || fromSpares > 3 {
		t.Errorf("%d of %d sessions made in a burst came from spares, want the 2 ready", fromSpares, made)
	}
	waitSpares(t, m, 2)
}

// The first prompt of a session made without a spare creates its files
// (chat, context.jsonl), and makes them durable with the directory: the
// directory's fsync comes once they are in it, and before the prompt is
// acknowledged. (It once came before context.jsonl was made: on a disk
// without a journal, its entry could be lost with the prompt.)
func TestFirstPromptSyncsTheDirectoryWithItsFiles(t *testing.T) {
	for _, spares := range []int{0, 1} {
		dir := t.TempDir()
		m, err := session.Open(session.Options{Dir: filepath.Join(dir, "s"), TrDir: filepath.Join(dir, "tr"), Runner: newRunner(), Spares: spares})
		if err != nil {
			t.Fatal(err)
		}
		waitSpares(t, m, spares)
		s, err := m.New(session.Spec{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		synced := map[string][]string{} // path -> the entries of the session's directory then
		session.SetSyncHook(func(path string) {
			ents, _ := os.ReadDir(s.Dir())
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			mu.Lock()
			synced[path] = names
			mu.Unlock()
		})
		err = s.Submit("hello")
		session.SetSyncHook(nil)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		for _, p := range []string{filepath.Join(s.Dir(), "meta.json"), filepath.Join(s.Dir(), "context.jsonl"), s.Dir(), filepath.Dir(s.Dir())} {
			if _, ok := synced[p]; !ok {
				t.Errorf("spares %d: %s not synced by the first prompt", spares, p)
			}
		}
		for _, name := range []string{"chat", "context.jsonl", "meta.json"} {
			if !slices.Contains(synced[s.Dir()], name) {
				t.Errorf("spares %d: the directory synced with %v in it, before its %s", spares, synced[s.Dir()], name)
			}
		}
		mu.Unlock()
		wait(t, s)
		m.Close()
	}
}
