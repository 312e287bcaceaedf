package main

import (
	"io"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/bench"
	"ollie.dev/ollie/internal/ninep/client"
)

func init() {
	registerBench(&benchSection{
		name: "9p",
		doc:  "9P requests to the daemon over its unix socket, next to socket round trips to an echo server",
		run:  bench9P,
	})
}

// bench9P measures what `ollie cat` and every FUSE open cost at the 9P
// level, against the same number of bare round trips on a unix socket.
func bench9P(b *benchEnv) ([]benchRow, error) {
	root, err := b.dial()
	if err != nil {
		return nil, err
	}
	echo, err := bench.NewEcho(b.dir)
	if err != nil {
		return nil, err
	}
	defer echo.Close()
	buf := make([]byte, 8192)
	readFile := func(names ...string) func() error {
		return func() error {
			f, err := root.Walk(b.ctx, names...)
			if err != nil {
				return err
			}
			defer f.Clunk(b.ctx)
			if err := f.Open(b.ctx, plan9.OREAD); err != nil {
				return err
			}
			_, err = f.Read(b.ctx, buf, 0)
			return err
		}
	}
	open, err := root.Walk(b.ctx, "m", "bench")
	if err != nil {
		return nil, err
	}
	defer open.Clunk(b.ctx)
	if err := open.Open(b.ctx, plan9.OREAD); err != nil {
		return nil, err
	}
	return measureRows(b, []benchOp{
		{"9p.floor4", "socket floor: 4 round trips", echo.RoundTrips(4), "", 0},
		{"9p.read", "walk+open+read+clunk " + benchFile, readFile("m", "bench"), "9p.floor4", 2},
		{"9p.help", "walk+open+read+clunk help (generated)", readFile("help"), "9p.floor4", 0},
		{"9p.floor1", "socket floor: 1 round trip", echo.RoundTrips(1), "", 0},
		{"9p.pread", "pread on an open fid", pread(b, open, buf), "9p.floor1", 2},
	})
}

func pread(b *benchEnv, f *client.Fid, buf []byte) func() error {
	return func() error {
		n, err := f.Read(b.ctx, buf, 0)
		if err == nil && n != len(benchContent) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
}
