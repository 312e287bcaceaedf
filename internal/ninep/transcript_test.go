package ninep

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/tree"
)

// TestTranscripts replays testdata/*.txt: T-message lines are sent, and
// runs of R-message lines are the replies expected, in any order within a
// run; comments and blank lines do not end a run. A line "then" between
// two runs says that every reply of the first comes before any of the
// second, and the matcher checks it. An R line containing * is matched as
// a pattern against the reply's printed form (* matches any run of
// non-blanks), for values such as the version of an on-disk file that
// depend on the clock. "pending N" waits until N requests are running
// at the server (a blocked read has reached its blocking point). "raw
// HEX" sends bytes as they are (a message no Fcall can make); "closed"
// expects the server to end the conversation.
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			runTranscript(t, file, string(data))
		})
	}
}

func runTranscript(t *testing.T, file, script string) {
	srv := New(testTree(t))
	r1, w1, _ := os.Pipe()
	r2, w2, _ := os.Pipe()
	serve := srv.ServeConn
	if strings.HasPrefix(filepath.Base(file), "auth") { // needs the token "sesame"
		serve = func(in io.ReadCloser, out io.WriteCloser) { srv.ServeAuthConn(in, out, NewToken([]byte("sesame"))) }
	}
	go func() { serve(r2, w1); r2.Close(); w1.Close() }()
	defer w2.Close()
	defer r1.Close()
	lines := strings.Split(script, "\n")
	for i := 0; i < len(lines); i++ {
		pos := fmt.Sprintf("%s:%d", file, i+1)
		line := strings.TrimSpace(lines[i])
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case line == "then": // the runs around it are apart, so in order
		case strings.HasPrefix(line, "pending "):
			var n int64
			if _, err := fmt.Sscan(line[len("pending "):], &n); err != nil {
				t.Fatalf("%s: %v", pos, err)
			}
			awaitPending(t, pos, srv, n)
		case strings.HasPrefix(line, "raw "):
			b, err := hex.DecodeString(strings.TrimSpace(line[4:]))
			if err != nil {
				t.Fatalf("%s: %v", pos, err)
			}
			if _, err := w2.Write(b); err != nil {
				t.Fatalf("%s: write: %v", pos, err)
			}
		case line == "closed":
			if f, err := readFcall(r1); err != io.EOF {
				t.Fatalf("%s: got %v, %v; want the connection closed", pos, f, err)
			}
		case line[0] == 'T':
			f, err := plan9.ParseFcall(line)
			if err != nil {
				t.Fatalf("%s: %v", pos, err)
			}
			if err := plan9.WriteFcall(w2, f); err != nil {
				t.Fatalf("%s: write: %v", pos, err)
			}
		case line[0] == 'R':
			var want []string
			for ; i < len(lines); i++ {
				l := strings.TrimSpace(lines[i])
				if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "R") {
					break
				}
				if strings.HasPrefix(l, "R") {
					want = append(want, l)
				}
			}
			i--
			expectReplies(t, pos, r1, want)
		default:
			t.Fatalf("%s: cannot parse %q", pos, line)
		}
	}
}

func expectReplies(t *testing.T, pos string, r io.Reader, want []string) {
	t.Helper()
	left := append([]string(nil), want...)
	for range want {
		got, err := readFcall(r)
		if err != nil {
			t.Fatalf("%s: %v (still expecting %q)", pos, err, left)
		}
		k := match(left, got)
		if k < 0 {
			t.Fatalf("%s: unexpected reply\n have %s\n want one of %q", pos, got, left)
		}
		left = append(left[:k], left[k+1:]...)
	}
}

func match(pats []string, got *plan9.Fcall) int {
	for k, p := range pats {
		if strings.Contains(p, "*") {
			// Print the pattern the way the reply prints, with * standing
			// for a number, then match.
			f, err := plan9.ParseFcall(strings.ReplaceAll(p, "*", wild))
			if err != nil {
				continue
			}
			re := "^" + strings.ReplaceAll(regexp.QuoteMeta(f.String()), wild, `[0-9]+`) + "$"
			if regexp.MustCompile(re).MatchString(got.String()) {
				return k
			}
			continue
		}
		f, err := plan9.ParseFcall(p)
		if err == nil && reflect.DeepEqual(f, got) {
			return k
		}
	}
	return -1
}

// awaitPending waits until n requests are running at srv: a read that
// blocks is then outstanding, so what the transcript sends next finds it.
func awaitPending(t *testing.T, pos string, srv *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for srv.Stats.Pending.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d requests pending, want %d", pos, srv.Stats.Pending.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// wild is a number no transcript uses, standing in for * while parsing.
const wild = "3735928559"

func readFcall(r io.Reader) (*plan9.Fcall, error) {
	type res struct {
		f   *plan9.Fcall
		err error
	}
	ch := make(chan res, 1)
	go func() { f, err := plan9.ReadFcall(r); ch <- res{f, err} }()
	select {
	case x := <-ch:
		return x.f, x.err
	case <-time.After(5 * time.Second):
		return nil, fmt.Errorf("timed out waiting for a reply")
	}
}

// testTree is the tree the transcripts talk to. Qids are allocated in
// order, so: / 0, hello 1, ctl 2, block 3, d 4; files met in d/ next.
//
//	hello  "hello, world"
//	ctl    accepts "ping", fails anything else
//	block  a read blocks until flushed
//	d/     an on-disk directory holding f ("data"), everything allowed
func testTree(t testing.TB) tree.Dir {
	fs := &tree.FS{Qids: tree.NewQids(), Uid: "glenda", Mtime: 1000}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	hello := fs.Text("hello", func() ([]byte, error) { return []byte("hello, world"), nil })
	ctl := fs.Ctl("ctl", func(ctx context.Context, cmd []byte) error {
		if string(bytes.TrimSpace(cmd)) != "ping" {
			return errs.E(errs.Invalid, "unknown command "+string(bytes.TrimSpace(cmd)))
		}
		return nil
	})
	block := fs.NewSynth("block", 0444, func(ctx context.Context, mode uint8) (tree.Handle, error) {
		return &blocker{}, nil
	})
	pol := &tree.DiskPolicy{Create: true, Mkdir: true, Write: true, Remove: true, Rename: true}
	return fs.NewRoot(0555,
		tree.Entry{Name: "hello", Node: hello},
		tree.Entry{Name: "ctl", Node: ctl},
		tree.Entry{Name: "block", Node: block},
		tree.Entry{Name: "d", Node: fs.NewDiskDir("d", root, pol)},
	)
}

type blocker struct{ tree.Snapshot }

func (*blocker) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	<-ctx.Done()
	return 0, errs.E(errs.Interrupted)
}
