package session

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

func TestQueueOrderAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.jsonl")
	q, err := loadQueue(path)
	if err != nil || q.len() != 0 {
		t.Fatalf("a missing queue: %d, %v", q.len(), err)
	}
	odd := []string{"first", "two\nlines", `"quoted" \ back`, "日本語", strings.Repeat("x", 100<<10)}
	for i, p := range odd {
		if n, err := q.push(p); err != nil || n != i+1 {
			t.Fatalf("push %d: %d, %v", i, n, err)
		}
	}
	// What was pushed is on disk: a reopen (a restart) finds it all.
	r, err := loadQueue(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.list(); fmt.Sprint(got) != fmt.Sprint(odd) {
		t.Fatalf("reopened %q", got)
	}
	if p, ok, err := q.pop(); p != "first" || !ok || err != nil {
		t.Fatalf("pop: %q %v %v", p, ok, err)
	}
	r, _ = loadQueue(path)
	if got := r.list(); fmt.Sprint(got) != fmt.Sprint(odd[1:]) {
		t.Fatalf("after a pop, reopened %q", got)
	}
	if err := q.clear(); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := q.pop(); ok || err != nil || p != "" {
		t.Fatalf("pop of an empty queue: %q %v %v", p, ok, err)
	}
	r, _ = loadQueue(path)
	if r.len() != 0 {
		t.Fatalf("cleared, reopened %q", r.list())
	}
	// No temporary file is left beside it.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("the directory holds %v", ents)
	}
}

// A record cut at the end (a file torn by a crash of the machine, or
// edited by hand) costs that record only: the ones before it load, and
// the next change writes a whole file again.
func TestQueuePartialRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.jsonl")
	for _, tail := range []string{`"cut in the mid`, `"cut`, `"`, `{"not":"a string"}`, "\x00\x00\x00", `"bad \q escape"`} {
		if err := os.WriteFile(path, []byte("\"one\"\n\"two\"\n"+tail), 0600); err != nil {
			t.Fatal(err)
		}
		q, err := loadQueue(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.list(); fmt.Sprint(got) != "[one two]" {
			t.Errorf("tail %q: loaded %q", tail, got)
		}
		if _, err := q.push("three"); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if string(b) != "\"one\"\n\"two\"\n\"three\"\n" {
			t.Errorf("tail %q: rewritten as %q", tail, b)
		}
	}
}

// A queue that cannot be saved changes nothing: what is in memory is
// what is on disk.
func TestQueueSaveFails(t *testing.T) {
	dir := t.TempDir()
	q, _ := loadQueue(filepath.Join(dir, "gone", "queue.jsonl"))
	if _, err := q.push("p"); err == nil {
		t.Fatal("a push into a missing directory succeeded")
	}
	if q.len() != 0 {
		t.Errorf("a failed push left %q", q.list())
	}
}

// Concurrent pushes and pops: every prompt comes out once, and the file
// ends as the memory does.
func TestQueueConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.jsonl")
	q, _ := loadQueue(path)
	const pushers, each = 4, 25
	var wg sync.WaitGroup
	for p := 0; p < pushers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := q.push(fmt.Sprintf("%d-%03d", p, i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	var mu sync.Mutex
	var out []string
	pushed := make(chan struct{})
	go func() { wg.Wait(); close(pushed) }()
	var pops sync.WaitGroup
	for c := 0; c < 3; c++ {
		pops.Add(1)
		go func() {
			defer pops.Done()
			var mine []string
			for {
				p, ok, err := q.pop()
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mine = append(mine, p)
					continue
				}
				select {
				case <-pushed:
					if q.len() == 0 {
						mu.Lock()
						out = append(out, mine...)
						mu.Unlock()
						return
					}
				default:
				}
			}
		}()
	}
	pops.Wait()
	if len(out) != pushers*each {
		t.Fatalf("%d prompts came out of %d", len(out), pushers*each)
	}
	sort.Strings(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			t.Fatalf("%s came out twice", out[i])
		}
	}
	r, _ := loadQueue(path)
	if r.len() != 0 {
		t.Errorf("the file still holds %q", r.list())
	}
}

// FuzzLoadQueue: whatever queue.jsonl holds (a file torn by a crash, or
// edited by hand), loading never fails or panics, a push after it writes
// a file that loads as what was loaded plus the push.
func FuzzLoadQueue(f *testing.F) {
	f.Add([]byte("\"one\"\n\"two\"\n\"cut"))
	f.Add([]byte("\"a\\nb\"\n{}\n[]\n\x00\n\"\\ud800\"\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "queue.jsonl")
		if err := os.WriteFile(path, b, 0600); err != nil {
			t.Fatal(err)
		}
		q, err := loadQueue(path)
		if err != nil {
			t.Fatal(err)
		}
		want := append(q.list(), "next")
		if _, err := q.push("next"); err != nil {
			t.Fatal(err)
		}
		r, err := loadQueue(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.list(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("reloaded %q, want %q", got, want)
		}
	})
}
