package ninep

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/tree"
)

type reported struct {
	who      string
	op, path string
	msg      string
}

// OnError hears of every failed request that a person would call an
// error, with who asked and the path of the file, and of nothing else.
func TestOnError(t *testing.T) {
	var mu sync.Mutex
	var got []reported
	srv := New(testTree(t))
	srv.OnError = func(who *tree.Principal, op, path string, err error) {
		w := "user"
		if who != nil {
			w = "stage:" + who.Session
		}
		mu.Lock()
		got = append(got, reported{w, op, path, err.Error()})
		mu.Unlock()
	}
	ctx := context.Background()
	dial := func(who *tree.Principal) *client.Fsys {
		a, b := net.Pipe()
		go srv.ServeConnAs(a, a, who)
		c, err := client.NewConn(b)
		if err != nil {
			t.Fatal(err)
		}
		root, err := c.Attach(ctx, "glenda", "")
		if err != nil {
			t.Fatal(err)
		}
		fsys := &client.Fsys{Root: root}
		t.Cleanup(func() { fsys.Close() })
		return fsys
	}
	user := dial(nil)
	if err := user.WriteFile(ctx, "ctl", []byte("bogus"), 0); err == nil {
		t.Fatal("bogus ctl accepted")
	}
	if _, err := user.Create(ctx, "d/bad name", 0644, plan9.OWRITE); err == nil {
		t.Fatal("bad name created")
	}
	if _, err := user.ReadFile(ctx, "hello"); err != nil { // fine: not reported
		t.Fatal(err)
	}
	stage := dial(&tree.Principal{Session: "s1"})
	if _, err := stage.Open(ctx, "hello", plan9.OREAD); err == nil {
		t.Fatal("a stage opened a file with no guard")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []reported{
		{"user", "write", "ctl", "bad request: unknown command bogus"},
		{"user", "create", "d/bad name", "bad request: bad file name"},
		{"stage:s1", "open", "hello", "permission denied: sandboxed code may not read here"},
	}
	if len(got) != len(want) {
		t.Fatalf("reported %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].who != want[i].who || got[i].op != want[i].op || got[i].path != want[i].path || !strings.HasPrefix(got[i].msg, want[i].msg) {
			t.Errorf("report %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
