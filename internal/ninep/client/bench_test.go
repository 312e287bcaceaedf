package client_test

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"

	"9fans.net/go/plan9"
	p9client "9fans.net/go/plan9/client"

	"ollie.dev/ollie/internal/ninep/ninetest"
)

// BenchmarkRawRoundTrips4 is the floor for BenchmarkWalkOpenReadClunk: four
// round trips of small messages over a unix socket to a Go echo server,
// which does nothing but read and write.
func BenchmarkRawRoundTrips4(b *testing.B) {
	sock := filepath.Join(b.TempDir(), "echo.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 32)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 32)
	b.ReportAllocs()
	for b.Loop() {
		for range 4 {
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, msg); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWalkOpenReadClunk is the cost of reading a small file: the four
// RPCs a FUSE open+read+close or `ollie cat` makes.
func BenchmarkWalkOpenReadClunk(b *testing.B) {
	tree := ninetest.NewTree()
	c, _ := dialUnix(b, tree)
	root := attach(b, c).Root
	ctx := context.Background()
	buf := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		f, err := root.Walk(ctx, "hello")
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Open(ctx, plan9.OREAD); err != nil {
			b.Fatal(err)
		}
		if n, err := f.Read(ctx, buf, 0); err != nil || n != 13 {
			b.Fatal(n, err)
		}
		if err := f.Clunk(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWalkOpenReadClunkParallel measures the same with many callers
// sharing one connection.
func BenchmarkWalkOpenReadClunkParallel(b *testing.B) {
	tree := ninetest.NewTree()
	c, _ := dialUnix(b, tree)
	root := attach(b, c).Root
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 1024)
		for pb.Next() {
			f, err := root.Walk(ctx, "hello")
			if err != nil {
				b.Error(err)
				return
			}
			f.Open(ctx, plan9.OREAD)
			f.Read(ctx, buf, 0)
			f.Clunk(ctx)
		}
	})
}

// Benchmark9fansClient is the same sequence through 9fans.net/go's client,
// for comparison.
func Benchmark9fansClient(b *testing.B) {
	tree := ninetest.NewTree()
	sock := filepath.Join(b.TempDir(), "9p.sock")
	l, err := tree.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	conn, err := p9client.Dial("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	fsys, err := conn.Attach(nil, "glenda", "")
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		f, err := fsys.Open("hello", plan9.OREAD)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := f.ReadAt(buf, 0); (err != nil && err != io.EOF) || n != 13 {
			b.Fatal(n, err)
		}
		f.Close()
	}
}
