package ns

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/session"
	"ollie.dev/ollie/internal/tree"
)

// sessTree serves s/ alone over 9P on a unix socket, with a real session
// manager, and returns a client's root and the manager.
func sessTree(t *testing.T, models func(context.Context, *session.Session) ([]string, error)) (*client.Fid, *session.Manager) {
	t.Helper()
	m, err := session.Open(session.Options{Dir: t.TempDir(), TrDir: t.TempDir(), DefaultAgent: "default"})
	if err != nil {
		t.Fatal(err)
	}
	fs := &tree.FS{Qids: tree.NewQids(), Uid: "glenda"}
	root := fs.NewRoot(0555, tree.Entry{Name: "s", Node: newSessionsDir(fs, Sessions{M: m, Models: models}, nil)})
	srv := ninep.New(root)
	sock := filepath.Join(t.TempDir(), "9p")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { srv.ServeConn(c, c); c.Close() }()
		}
	}()
	c, err := client.Dial(context.Background(), "unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fid, err := c.Attach(context.Background(), "glenda", "")
	if err != nil {
		t.Fatal(err)
	}
	return fid, m
}

func readFile(ctx context.Context, root *client.Fid, names ...string) (string, error) {
	f, err := root.Walk(ctx, names...)
	if err != nil {
		return "", err
	}
	defer f.Clunk(context.Background())
	if err := f.Open(ctx, plan9.OREAD); err != nil {
		return "", err
	}
	buf := make([]byte, 8192)
	n, err := f.Read(ctx, buf, 0)
	return string(buf[:n]), err
}

// TestIdxConcurrent: s/idx is read over 9P while other clients create
// sessions, change their settings and submit prompts (go test -race); it
// reads the summaries the sessions publish, never their locks.
func TestIdxConcurrent(t *testing.T) {
	root, m := sessTree(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	var sessions []*session.Session
	for i := 0; i < 3; i++ {
		s, err := m.New(session.Spec{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				s.SetCfg(map[string]string{"model": "m" + itoa(int64(i))})
				s.Submit("hello " + itoa(int64(i))) // the turn fails at once: no runner
			}
		}()
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				text, err := readFile(ctx, root, "s", "idx")
				if err != nil {
					t.Error(err)
					return
				}
				if n := strings.Count(text, "\n"); n != len(sessions) {
					t.Errorf("idx has %d lines, want %d:\n%s", n, len(sessions), text)
				}
			}
		}()
	}
	wg.Wait()
	// The failing turns run on: let them end before the directories go.
	for _, s := range sessions {
		s.Wait(nil)
	}
	text, err := readFile(ctx, root, "s", "idx")
	if err != nil || !strings.Contains(text, "\tm19\t") {
		t.Errorf("idx after the writes: %q, %v", text, err)
	}
}

// TestModelsContext: opening models asks the backend with the open's
// context, so a flush of the open (Ctrl-C of the reader) ends it.
func TestModelsContext(t *testing.T) {
	asked := make(chan struct{}, 1)
	models := func(ctx context.Context, s *session.Session) ([]string, error) {
		asked <- struct{}{}
		<-ctx.Done() // a backend that never answers
		return nil, ctx.Err()
	}
	root, m := sessTree(t, models)
	s, err := m.New(session.Spec{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := readFile(ctx, root, "s", s.ID(), "models"); res <- err }()
	<-asked
	cancel() // the client flushes the Topen
	if err := within(t, res, "the flushed open of models"); err == nil {
		t.Fatal("open of models succeeded after the flush")
	}
	// The connection still serves: the flushed open did not hold it.
	if _, err := readFile(context.Background(), root, "s", s.ID(), "state"); err != nil {
		t.Fatalf("read after the flush: %v", err)
	}
}

// TestAnswerFlush: while one read of a blocking file waits for its
// answer, a second read at 0 on the same open waits for its turn, and is
// flushed at once (answerHandle held its lock across the wait, so the
// second could not be interrupted).
func TestAnswerFlush(t *testing.T) {
	release := make(chan struct{})
	h := &answerHandle{ask: func(ctx context.Context) ([]byte, error) {
		select {
		case <-release:
			return []byte("answer\n"), nil
		case <-ctx.Done():
			return nil, errs.E(errs.Interrupted)
		}
	}}
	first := make(chan string, 1)
	go func() {
		buf := make([]byte, 100)
		n, _ := h.ReadAt(context.Background(), buf, 0)
		first <- string(buf[:n])
	}()
	waitTurnTaken(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { _, err := h.ReadAt(ctx, make([]byte, 100), 0); second <- err }()
	cancel()
	if err := within(t, second, "the flushed second read"); !errs.Is(err, errs.Interrupted) {
		t.Fatalf("flushed second read: %v", err)
	}
	close(release)
	if got := <-first; got != "answer\n" {
		t.Fatalf("first read: %q", got)
	}
	buf := make([]byte, 100)
	if n, _ := h.ReadAt(context.Background(), buf, 3); string(buf[:n]) != "wer\n" {
		t.Fatalf("read at 3: %q", buf[:n])
	}
}

// waitTurnTaken waits until a read holds h's turn (it is in ask).
func waitTurnTaken(t *testing.T, h *answerHandle) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if len(h.token()) == 1 {
			return
		}
	}
	t.Fatal("the first read never asked")
}

// TestAnswerConcurrent: concurrent reads at 0 and further on (go test
// -race): asks are serialized, so an ask may keep state without a lock,
// as popHandle's does.
func TestAnswerConcurrent(t *testing.T) {
	n := 0 // unsynchronized on purpose: the turn serializes asks
	h := &answerHandle{ask: func(ctx context.Context) ([]byte, error) {
		n++
		return []byte("answer " + itoa(int64(n)) + "\n"), nil
	}}
	var wg sync.WaitGroup
	for r := 0; r < 8; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			buf := make([]byte, 100)
			for i := 0; i < 200; i++ {
				off := int64(r % 2 * 3)
				if _, err := h.ReadAt(context.Background(), buf, off); err != nil {
					t.Error(err)
					return
				}
			}
		}(r)
	}
	wg.Wait()
	if n != 4*200 {
		t.Errorf("%d asks, want %d", n, 4*200)
	}
}

// within returns what ch yields. The deadline guards against a request
// that a flush cannot end (the bug), so that the test fails rather than
// hangs; it asserts nothing about time.
func within(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never returned", what)
		return nil
	}
}
