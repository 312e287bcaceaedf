package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
	"ollie.dev/ollie/internal/ninep/ninetest"
)

// startRead starts a Read of f in a goroutine and returns its result
// channel.
func startRead(ctx context.Context, f *client.Fid) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := f.Read(ctx, make([]byte, 100), 0)
		done <- err
	}()
	return done
}

func wait(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(hangTimeout):
		t.Fatalf("%s: hung", what)
		return nil
	}
}

func TestFlushBlockedRead(t *testing.T) {
	transports(t, func(t *testing.T, tree *ninetest.Tree, c *client.Conn) {
		bg := context.Background()
		fsys := attach(t, c)
		// Many rounds, so flushed tags are seen to be reusable.
		for range 50 {
			f, err := fsys.Open(bg, "block", plan9.OREAD)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(bg)
			done := startRead(ctx, f)
			<-tree.Blocked()
			cancel()
			err = wait(t, done, "flushed read")
			if !errs.Is(err, errs.Interrupted) {
				t.Fatalf("flushed read returned %v, want interrupted", err)
			}
			if err := f.Clunk(bg); err != nil {
				t.Fatal(err)
			}
		}
		if data, err := fsys.ReadFile(bg, "hello"); err != nil || string(data) != "hello, world\n" {
			t.Fatalf("connection unusable after flushes: %q, %v", data, err)
		}
	})
}

func TestCancelledBeforeSend(t *testing.T) {
	tree := ninetest.NewTree()
	c, _ := dialUnix(t, tree)
	fsys := attach(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fsys.Root.Walk(ctx, "hello")
	if !errs.Is(err, errs.Interrupted) {
		t.Fatalf("walk with cancelled ctx: %v", err)
	}
	if _, err := fsys.Stat(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
}

func TestUnblockedRead(t *testing.T) {
	tree := ninetest.NewTree()
	c, _ := dialUnix(t, tree)
	bg := context.Background()
	fsys := attach(t, c)
	f, err := fsys.Open(bg, "block", plan9.OREAD)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var got []byte
	go func() {
		buf := make([]byte, 100)
		n, err := f.Read(bg, buf, 0)
		got = buf[:n]
		done <- err
	}()
	<-tree.Blocked()
	tree.Unblock()
	if err := wait(t, done, "unblocked read"); err != nil || string(got) != "unblocked\n" {
		t.Fatalf("read = %q, %v", got, err)
	}
}

func TestConnectionDeath(t *testing.T) {
	tree := ninetest.NewTree()
	c, l := dialUnix(t, tree)
	bg := context.Background()
	fsys := attach(t, c)
	f, err := fsys.Open(bg, "block", plan9.OREAD)
	if err != nil {
		t.Fatal(err)
	}
	done := startRead(bg, f)
	<-tree.Blocked()
	l.Close() // the daemon dies
	err = wait(t, done, "read pending at death")
	if !errs.Is(err, errs.Unavailable) || !errors.Is(err, client.ErrHungup) {
		t.Fatalf("pending read on dead connection: %v, want unavailable/hungup", err)
	}
	select {
	case <-c.Done():
	case <-time.After(hangTimeout):
		t.Fatal("Done not closed")
	}
	_, err = fsys.Stat(bg, "hello")
	if !errors.Is(err, client.ErrHungup) {
		t.Fatalf("call on dead connection: %v", err)
	}
	tree.Unblock() // release the server's orphaned handler
}

func TestCloseFailsPending(t *testing.T) {
	tree := ninetest.NewTree()
	rwc, err := tree.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewConn(rwc)
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	fsys := attach(t, c)
	f, err := fsys.Open(bg, "block", plan9.OREAD)
	if err != nil {
		t.Fatal(err)
	}
	done := startRead(bg, f)
	<-tree.Blocked()
	c.Close()
	if err := wait(t, done, "read pending at close"); !errors.Is(err, client.ErrHungup) {
		t.Fatalf("pending read after Close: %v", err)
	}
	tree.Unblock()
}
