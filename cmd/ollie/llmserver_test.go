package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestLLMServer(t *testing.T) {
	c := commands["llmserver"]
	fs := flag.NewFlagSet("llmserver", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse([]string{"-reply", "hello from the script"}); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.run(ctx, &Env{Stdout: pw}, fs.Args()); pw.Close() }()
	out := bufio.NewReader(pr)
	url, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url = strings.TrimSpace(url)
	go io.Copy(io.Discard, out)

	resp, err := http.Post(url+"/api/chat", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"hell`) || !strings.Contains(string(body), `"done":true`) {
		t.Errorf("reply %s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

func TestLLMServerRefusesNonLoopback(t *testing.T) {
	c := commands["llmserver"]
	fs := flag.NewFlagSet("llmserver", flag.ContinueOnError)
	c.flags(fs)
	fs.Parse([]string{"-addr", "0.0.0.0:0"})
	if err := c.run(context.Background(), &Env{Stdout: io.Discard}, nil); err == nil {
		t.Errorf("listening on all interfaces was allowed")
	}
}
