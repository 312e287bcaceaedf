package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ollie.dev/ollie/internal/session"
)

// Finished jobs are collected by the rule of collect.go: a spawned one
// after Keep.Spawned, the user's after Keep.User, members' transcripts
// kept in tr/; a running one never.
func TestCollect(t *testing.T) {
	tr := t.TempDir()
	r, err := Open(Options{Dir: t.TempDir(), TrDir: tr, Session: session.Options{DefaultAgent: "default"},
		Keep: Keep{Spawned: time.Hour, User: 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spawned, err := r.New(Spec{Cwd: t.TempDir(), Parallel: 2, Prompt: "hi", Parent: "p1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	user, err := r.New(Spec{Cwd: t.TempDir(), Parallel: 1, Prompt: "hi"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-spawned.Done() // with no runner, each turn fails at once
	<-user.Done()

	r.CollectNow(time.Now()) // too soon for either
	if len(r.List()) != 2 {
		t.Fatalf("collected too soon: %d jobs left", len(r.List()))
	}
	r.CollectNow(time.Now().Add(2 * time.Hour))
	if _, ok := r.Get(spawned.ID()); ok {
		t.Errorf("the spawned job outlived its hour")
	}
	if _, ok := r.Get(user.ID()); !ok {
		t.Errorf("the user's job went after two hours")
	}
	if _, err := os.Stat(spawned.dir); !os.IsNotExist(err) {
		t.Errorf("the spawned job's directory is still there: %v", err)
	}
	chats, _ := filepath.Glob(filepath.Join(tr, "*-b"+spawned.ID()+"-*.chat"))
	if len(chats) != 2 {
		t.Fatalf("transcripts of the members: %v", chats)
	}
	if b, _ := os.ReadFile(chats[0]); !strings.Contains(string(b), "user: hi") {
		t.Errorf("a member's transcript lacks its prompt: %q", b)
	}
	r.CollectNow(time.Now().Add(25 * time.Hour))
	if len(r.List()) != 0 {
		t.Errorf("the user's job outlived its day")
	}
}
