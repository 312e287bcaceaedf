package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"9fans.net/go/plan9"

	"ollie.dev/ollie/internal/llmtest"
	"ollie.dev/ollie/internal/ninep/client"
)

// startTimeout bounds every start of a process of the run; a daemon
// reading 10,000 sessions from disk on a loaded machine included.
const startTimeout = 2 * time.Minute

// A Daemon is `ollie serve` in a process of its own, in a home of its
// own, talking to the scripted model, and the 9P connection the bench
// measures it through.
type Daemon struct {
	*Proc
	home, sock string
	env        []string
	argv       []string
	Fsys       *client.Fsys
	cwd        string
	seq        *atomic.Int64 // for session names, unique in the home
	ref        bool          // the reference daemon (ref.go)
	quiet      bool          // its stdout to /dev/null
}

// benchFile is the small file the 9P and FUSE rows read, in m/ of the
// daemon's data directory: 13 bytes, as "hello, world\n".
const benchFile, benchContent = "m/bench", "hello, world\n"

// Models are the scripted model servers every daemon of a run talks to:
// one answering at once (the turn rows), one streaming (ingest), reached
// through a proxy that notes when each piece passes.
type Models struct {
	Instant, Stream *Proc
	InstantURL      string
	Proxy           *Proxy
}

// Prompts the instant model knows (see instantScript).
const (
	promptOne   = "one"   // execute_code `echo hi`, then the answer
	promptNine  = "nine"  // execute_code of 9 stages, then the answer
	promptPlain = "plain" // the answer, no tool
	promptBig   = "big"   // (stream model) a 1 MiB answer
	promptPaced = "paced" // (stream model) a 128 KiB answer, for a paced stream
	promptBurst = "burst" // (stream model) the 1 MiB answer, made ahead and written at once
)

// instantScript: every response at once, so the model costs next to
// nothing and what is left is the daemon.
func instantScript() *llmtest.Script {
	nine := make([]map[string]string, 9)
	for i := range nine {
		nine[i] = map[string]string{"language": "bash", "code": "true"}
	}
	nine[8]["code"] = "echo hi"
	args, _ := json.Marshal(map[string]any{"steps": nine})
	return &llmtest.Script{Instant: true, NoRecord: true,
		Rules: []llmtest.Rule{
			{If: "^" + promptOne, Then: llmtest.Turn{Calls: []llmtest.Call{llmtest.ExecuteCode("bash", "echo hi")}}},
			{If: "^" + promptNine, Then: llmtest.Turn{Calls: []llmtest.Call{{Name: "execute_code", Args: args}}}},
		},
		Default: &llmtest.Turn{Text: "done"},
	}
}

// IngestSize is the size of the streamed reply, in pieces of ingestChunk
// bytes, each starting with its number: "#0000042" and padding; the
// paced reply is pacedSize.
const (
	IngestSize  = 1 << 20
	pacedSize   = 128 << 10
	ingestChunk = 64
)

func ingestText() string { return numberedText(IngestSize) }

// numberedText is size bytes of numbered pieces.
func numberedText(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "#%07d", i)
		b.WriteString(strings.Repeat("x", ingestChunk-9))
		b.WriteByte(' ')
	}
	return b.String()
}

// streamScript streams the big reply in pieces of ingestChunk bytes, each
// flushed as it is made, as a model does token by token.
func streamScript() *llmtest.Script {
	return &llmtest.Script{NoRecord: true, Chunk: ingestChunk,
		Rules: []llmtest.Rule{
			{If: "^" + promptBig, Then: llmtest.Turn{Text: ingestText()}},
			{If: "^" + promptPaced, Then: llmtest.Turn{Text: numberedText(pacedSize)}},
			{If: "^" + promptBurst, Then: llmtest.Turn{RawFile: burstFile}},
		},
		Default: &llmtest.Turn{Text: "done"},
	}
}

// burstFile holds the streaming model's answer to promptBurst, beside
// its script: the big reply's stream, made once by llmtest.Render, so
// that the model writes it as fast as the socket takes it.
const burstFile = "burst.sse"

// startModels starts the two scripted servers (`ollie llmserver`).
func startModels(exe, dir string, env []string) (*Models, error) {
	burst, err := llmtest.Render("openai", llmtest.Turn{Text: ingestText()}, ingestChunk, "bench")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, burstFile), burst, 0600); err != nil {
		return nil, err
	}
	m := &Models{}
	start := func(name string, sc *llmtest.Script) (*Proc, string, error) {
		path := filepath.Join(dir, name+".json")
		b, err := json.Marshal(sc)
		if err != nil {
			return nil, "", err
		}
		if err := os.WriteFile(path, b, 0600); err != nil {
			return nil, "", err
		}
		p, err := startProc(name, dir, env, exe, "llmserver", "-script", path)
		if err != nil {
			return nil, "", err
		}
		url, err := p.firstLine(startTimeout)
		if err != nil {
			p.Stop(time.Second)
			return nil, "", err
		}
		return p, url, nil
	}
	if m.Instant, m.InstantURL, err = start("llm-instant", instantScript()); err != nil {
		return nil, err
	}
	var url string
	if m.Stream, url, err = start("llm-stream", streamScript()); err != nil {
		m.Close()
		return nil, err
	}
	if m.Proxy, err = NewProxy(strings.TrimPrefix(url, "http://")); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close stops the servers.
func (m *Models) Close() {
	if m.Proxy != nil {
		m.Proxy.Close()
	}
	for _, p := range []*Proc{m.Instant, m.Stream} {
		if p != nil {
			p.Stop(5 * time.Second)
		}
	}
}

// newDaemon lays out a home in dir for a daemon: its configuration (the
// two scripted models as backends), m/bench, a working directory for
// sessions. Start starts it.
func newDaemon(exe, dir string, env []string, m *Models) (*Daemon, error) {
	home := filepath.Join(dir, "home")
	d := &Daemon{home: home, sock: filepath.Join(dir, "run", "ollie.sock"), cwd: filepath.Join(dir, "cwd"), seq: new(atomic.Int64)}
	cfg := map[string]any{"backends": []map[string]string{
		{"name": "instant", "kind": "ollama", "base_url": m.InstantURL},
		{"name": "stream", "kind": "openai", "base_url": "http://" + m.Proxy.Addr() + "/v1"},
	}}
	b, _ := json.Marshal(cfg)
	data := filepath.Join(home, ".local", "share", "ollie")
	for _, f := range []struct{ path, data string }{
		{filepath.Join(home, ".config", "ollie", "ollie.json"), string(b)},
		{filepath.Join(data, filepath.FromSlash(benchFile)), benchContent},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(f.path, []byte(f.data), 0600); err != nil {
			return nil, err
		}
	}
	for _, p := range []string{d.cwd, filepath.Dir(d.sock)} {
		if err := os.MkdirAll(p, 0700); err != nil {
			return nil, err
		}
	}
	d.env = append([]string{"HOME=" + home, "XDG_RUNTIME_DIR=" + filepath.Dir(d.sock)}, env...)
	d.argv = []string{exe, "serve", "-socket", d.sock}
	return d, nil
}

// Start starts the daemon's process and returns once it serves 9P on its
// socket, with a client attached.
func (d *Daemon) Start(ctx context.Context) error {
	p, err := startProcOut("daemon", filepath.Dir(d.home), d.env, d.quiet, d.argv...)
	if err != nil {
		return err
	}
	d.Proc = p
	if err := p.waitSocket(d.sock, startTimeout); err != nil {
		p.Stop(time.Second)
		return err
	}
	if d.Fsys, err = client.Mount(ctx, d.sock, "bench", ""); err != nil {
		p.Stop(time.Second)
		return err
	}
	return nil
}

// Stop closes the client and stops the daemon.
func (d *Daemon) Stop() error {
	if d.Fsys != nil {
		d.Fsys.Close()
		d.Fsys = nil
	}
	if d.Proc == nil {
		return nil
	}
	return d.Proc.Stop(time.Minute)
}

// NewSession creates a session with a write to s/new (as `echo cwd=...
// name=... > s/new` does) and returns its id.
func (d *Daemon) NewSession(ctx context.Context, backend string) (string, error) {
	id := fmt.Sprintf("b%d", d.seq.Add(1))
	line := "cwd=" + d.cwd + " name=" + id
	if d.ref && backend == "stream" {
		backend = "openai" // the reference names backends by their kind
	}
	if backend != "" {
		line += " backend=" + backend
	}
	return id, d.Fsys.WriteFile(ctx, "s/new", []byte(line+"\n"), 0)
}

// Clone creates a session through the clone file: open s/new, write, read
// the id back on the same fid, clunk.
func (d *Daemon) Clone(ctx context.Context) (string, error) {
	f, err := d.Fsys.Open(ctx, "s/new", plan9.ORDWR)
	if err != nil {
		return "", err
	}
	defer f.Clunk(ctx)
	if _, err := f.WriteAt(ctx, []byte("cwd="+d.cwd+"\n"), 0); err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	n, err := f.ReadAt(ctx, buf, 0)
	if n > 0 {
		err = nil
	}
	id := strings.TrimSpace(string(buf[:n]))
	if err == nil && id == "" {
		err = fmt.Errorf("s/new returned no id")
	}
	return id, err
}

// Turn submits prompt to session id, waits until it is idle and reads the
// reply: echo prompt > prompt; cat wait; cat reply.
func (d *Daemon) Turn(ctx context.Context, id, prompt string) error {
	return d.turn(ctx, d.Fsys, id, prompt)
}

func (d *Daemon) turn(ctx context.Context, fsys *client.Fsys, id, prompt string) error {
	if d.ref {
		return refTurn(ctx, fsys, id, prompt)
	}
	return turn(ctx, fsys, id, prompt)
}

// Dial makes another client connection to the daemon.
func (d *Daemon) Dial(ctx context.Context) (*client.Fsys, error) {
	return client.Mount(ctx, d.sock, "bench", "")
}

func turn(ctx context.Context, fsys *client.Fsys, id, prompt string) error {
	if err := fsys.WriteFile(ctx, "s/"+id+"/prompt", []byte(prompt+"\n"), 0); err != nil {
		return err
	}
	w, err := fsys.ReadFile(ctx, "s/"+id+"/wait")
	if err != nil {
		return err
	}
	if string(w) != "idle\n" {
		return fmt.Errorf("turn of %s ended %q", id, strings.TrimSpace(string(w)))
	}
	n, err := readThrough(ctx, fsys, "s/"+id+"/reply", 0)
	if err == nil && n == 0 {
		err = fmt.Errorf("turn of %s: empty reply", id)
	}
	return err
}

// readThrough reads the file p from off to its end through a buffer of
// 64 KiB, as cat does, and returns how much it read: ollie's turn reads
// its reply so, and refTurn the reference's chat after its offset, so
// that the two columns read alike. Reading a 1 MiB reply into a slice of
// its own (ReadFile) cost this process 3–4 ms of page faults, which a
// user's cat does not pay.
func readThrough(ctx context.Context, fsys *client.Fsys, p string, off int64) (int64, error) {
	f, err := fsys.Open(ctx, p, plan9.OREAD)
	if err != nil {
		return 0, err
	}
	defer f.Clunk(ctx)
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := f.Read(ctx, buf, off+n)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// ranTool checks that the last turn of session id ran its execute_code:
// the chat after the last prompt has the stage's output, "hi".
func (d *Daemon) ranTool(ctx context.Context, id string) error {
	chat, err := d.Fsys.ReadFile(ctx, "s/"+id+"/chat")
	if err != nil {
		return err
	}
	last := chat[max(0, bytes.LastIndex(chat, []byte("user: "))):]
	if !bytes.Contains(last, []byte("\nhi\n")) {
		return fmt.Errorf("session %s: execute_code did not run:\n%s", id, last)
	}
	return nil
}
