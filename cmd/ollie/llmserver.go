package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/llmtest"
)

var llmserverFlags struct {
	addr, script, reply string
	latency             time.Duration
	instant             bool
}

func init() {
	register(&command{
		name:  "llmserver",
		args:  "[-addr HOST:PORT] [-script FILE | -reply TEXT] [-latency D] [-instant]",
		short: "run the scripted LLM server, for tests, benchmarks and demos",
		long: `Llmserver serves a scripted model over HTTP on a loopback address, in the
wire formats of OpenAI chat completions (/v1/chat/completions), Anthropic
Messages (/v1/messages) and Ollama (/api/chat), with their model listings.
It prints its URL on the first line, then the base URL to configure for
each backend kind, and runs until interrupted.

The script file (JSON) is described in docs/backends.md. Without one, the
server answers every prompt with -reply, or echoes the last message.`,
		noConfig: true,
		flags: func(fs *flag.FlagSet) {
			f := &llmserverFlags
			fs.StringVar(&f.addr, "addr", "127.0.0.1:0", "listen on `HOST:PORT` (loopback only; port 0 picks a free one)")
			fs.StringVar(&f.script, "script", "", "answer as the script `FILE` says")
			fs.StringVar(&f.reply, "reply", "", "answer every prompt with `TEXT`")
			fs.DurationVar(&f.latency, "latency", 0, "pause `D` before each streamed piece, as a model's per-token time")
			fs.BoolVar(&f.instant, "instant", false, "send each response at once, for benchmarks")
		},
		run: runLLMServer,
	})
}

func runLLMServer(ctx context.Context, env *Env, args []string) error {
	f := &llmserverFlags
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if f.script != "" && f.reply != "" {
		return usagef("-script and -reply exclude each other")
	}
	if err := config.CheckListen(f.addr); err != nil {
		return usagef("%v", err)
	}
	sc := &llmtest.Script{Default: &llmtest.Turn{Text: "you said: {{last}}"}}
	if f.reply != "" {
		sc.Default.Text = f.reply
	}
	if f.script != "" {
		var err error
		if sc, err = llmtest.LoadScript(f.script); err != nil {
			return err
		}
	}
	if f.latency > 0 {
		sc.Latency = llmtest.Duration(f.latency)
	}
	sc.Instant = sc.Instant || f.instant
	srv, err := llmtest.Start(f.addr, sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(env.Stdout, "%s\n%-9s %s/v1\n%-9s %s\n%-9s %s\n", srv.URL,
		config.KindOpenAI, srv.URL, config.KindAnthropic, srv.URL, config.KindOllama, srv.URL)
	<-ctx.Done()
	return nil
}
