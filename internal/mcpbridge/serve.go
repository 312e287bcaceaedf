package mcpbridge

import (
	"context"
	"errors"
	"io"
	"strings"

	"9fans.net/go/plan9"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"ollie.dev/ollie/internal/config"
	"ollie.dev/ollie/internal/errs"
	"ollie.dev/ollie/internal/ninep/client"
)

// serveInstructions tell an MCP host what ollie is.
const serveInstructions = `ollie runs LLM agent sessions; each session is a directory of files in ollie's tree ` +
	`(s/ID/prompt, reply, chat, state, ...). Start one with new_session (or let ask do it), ` +
	`give it work with ask (prompt and wait for the reply) or prompt then wait. ` +
	`read shows any file of the tree: help describes them all, s/idx lists sessions.`

// maxRead bounds what the read tool returns.
const maxRead = 1 << 20

// NewOllieServer returns ollie as an MCP server: its tools are file
// operations on the tree of the daemon fsys is attached to, so an MCP
// host drives ollie agents exactly as a shell script would.
func NewOllieServer(fsys *client.Fsys) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ollie", Version: Version},
		&mcp.ServerOptions{Instructions: serveInstructions})
	t := &treeTools{fsys: fsys}
	mcp.AddTool(s, &mcp.Tool{Name: "sessions",
		Description: "List ollie's sessions, one a line: id state agent backend model cwd."}, t.sessions)
	mcp.AddTool(s, &mcp.Tool{Name: "new_session",
		Description: "Start a session working in cwd; returns its id."}, t.newSession)
	mcp.AddTool(s, &mcp.Tool{Name: "prompt",
		Description: "Give a session a prompt and return at once (queued if a turn runs); wait for the answer with wait."}, t.prompt)
	mcp.AddTool(s, &mcp.Tool{Name: "wait",
		Description: "Wait until a session is idle and return its last reply."}, t.wait)
	mcp.AddTool(s, &mcp.Tool{Name: "ask",
		Description: "Prompt a session and wait for its reply. Without a session, a new one is started in cwd."}, t.ask)
	mcp.AddTool(s, &mcp.Tool{Name: "read",
		Description: "Read a file of ollie's tree, e.g. help, s/idx, s/ID/chat, m/NOTE. Blocking files (wait, events) block."}, t.read)
	mcp.AddTool(s, &mcp.Tool{Name: "write",
		Description: "Write a file of ollie's tree, e.g. s/ID/ctl (stop, compact), s/ID/cfg, m/NOTE."}, t.write)
	return s
}

type treeTools struct{ fsys *client.Fsys }

type sessionIn struct {
	Session string `json:"session" jsonschema:"the session id"`
}

type newSessionIn struct {
	Cwd     string `json:"cwd" jsonschema:"the session's working directory, absolute"`
	Name    string `json:"name,omitempty" jsonschema:"a name to use as its id"`
	Agent   string `json:"agent,omitempty" jsonschema:"agent configuration (a/NAME.json)"`
	Backend string `json:"backend,omitempty"`
	Model   string `json:"model,omitempty"`
}

type promptIn struct {
	Session string `json:"session" jsonschema:"the session id"`
	Prompt  string `json:"prompt"`
}

type askIn struct {
	Prompt  string `json:"prompt"`
	Session string `json:"session,omitempty" jsonschema:"the session id; omit to start a new session"`
	Cwd     string `json:"cwd,omitempty" jsonschema:"working directory of a new session, absolute"`
}

type askOut struct {
	Session string `json:"session"`
	State   string `json:"state"`
	Reply   string `json:"reply"`
}

type pathIn struct {
	Path string `json:"path" jsonschema:"path in the tree, e.g. s/idx"`
}

type writeIn struct {
	Path string `json:"path" jsonschema:"path in the tree, e.g. s/ID/ctl"`
	Data string `json:"data"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (t *treeTools) sessions(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	b, err := t.fsys.ReadFile(ctx, "s/idx")
	if err != nil {
		return nil, nil, err
	}
	if len(b) == 0 {
		return text("(no sessions)\n"), nil, nil
	}
	return text(string(b)), nil, nil
}

func (t *treeTools) newSession(ctx context.Context, _ *mcp.CallToolRequest, in newSessionIn) (*mcp.CallToolResult, any, error) {
	id, err := t.create(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return text(id), nil, nil
}

// create makes a session through the clone file s/new: write the
// settings, read the id back on the same fid.
func (t *treeTools) create(ctx context.Context, in newSessionIn) (string, error) {
	if in.Cwd == "" || !strings.HasPrefix(in.Cwd, "/") {
		return "", errs.E(errs.Invalid, "cwd must be an absolute path")
	}
	var spec strings.Builder
	for _, kv := range [][2]string{{"cwd", in.Cwd}, {"name", in.Name}, {"agent", in.Agent}, {"backend", in.Backend}, {"model", in.Model}} {
		if strings.ContainsAny(kv[1], "\n") {
			return "", errs.E(errs.Invalid, kv[0]+" has a newline")
		}
		if kv[1] != "" {
			spec.WriteString(kv[0] + "=" + kv[1] + "\n")
		}
	}
	f, err := t.fsys.Open(ctx, "s/new", plan9.ORDWR)
	if err != nil {
		return "", err
	}
	defer f.Clunk(context.Background())
	if _, err := f.WriteAt(ctx, []byte(spec.String()), 0); err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	n, err := f.ReadAt(ctx, buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimSpace(string(buf[:n])), nil
}

func (t *treeTools) prompt(ctx context.Context, _ *mcp.CallToolRequest, in promptIn) (*mcp.CallToolResult, any, error) {
	if err := t.submit(ctx, in.Session, in.Prompt); err != nil {
		return nil, nil, err
	}
	return text("submitted; wait for the reply with wait"), nil, nil
}

func (t *treeTools) submit(ctx context.Context, id, prompt string) error {
	if !config.ValidName(id) {
		return errs.E(errs.Invalid, "bad session id "+quote(id))
	}
	if strings.TrimSpace(prompt) == "" {
		return errs.E(errs.Invalid, "empty prompt")
	}
	return t.writeFile(ctx, "s/"+id+"/prompt", []byte(prompt+"\n"))
}

func (t *treeTools) wait(ctx context.Context, _ *mcp.CallToolRequest, in sessionIn) (*mcp.CallToolResult, any, error) {
	out, err := t.waitReply(ctx, in.Session)
	if err != nil {
		return nil, nil, err
	}
	return text(out.Reply), out, nil
}

// waitReply blocks on s/ID/wait, then reads the reply; a turn that ended
// in an error is an error.
func (t *treeTools) waitReply(ctx context.Context, id string) (askOut, error) {
	if !config.ValidName(id) {
		return askOut{}, errs.E(errs.Invalid, "bad session id "+quote(id))
	}
	st, err := t.fsys.ReadFile(ctx, "s/"+id+"/wait")
	if err != nil {
		return askOut{}, err
	}
	state := strings.TrimSpace(string(st))
	if state != "idle" {
		return askOut{}, errors.New("session " + id + ": " + state)
	}
	reply, err := t.fsys.ReadFile(ctx, "s/"+id+"/reply")
	if err != nil {
		return askOut{}, err
	}
	return askOut{Session: id, State: state, Reply: string(reply)}, nil
}

func (t *treeTools) ask(ctx context.Context, _ *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, askOut, error) {
	id := in.Session
	if id == "" {
		var err error
		if id, err = t.create(ctx, newSessionIn{Cwd: in.Cwd}); err != nil {
			return nil, askOut{}, err
		}
	}
	if err := t.submit(ctx, id, in.Prompt); err != nil {
		return nil, askOut{}, err
	}
	out, err := t.waitReply(ctx, id)
	if err != nil {
		return nil, askOut{}, err
	}
	return text(out.Reply), out, nil
}

func (t *treeTools) read(ctx context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
	f, err := t.fsys.Open(ctx, treePath(in.Path), plan9.OREAD)
	if err != nil {
		return nil, nil, err
	}
	defer f.Clunk(context.Background())
	var all []byte
	buf := make([]byte, 64<<10)
	for len(all) < maxRead {
		n, err := f.ReadAt(ctx, buf, int64(len(all)))
		all = append(all, buf[:n]...)
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if len(all) >= maxRead {
		all = append(all[:maxRead], "\n... (cut at 1 MiB)\n"...)
	}
	return text(string(all)), nil, nil
}

func (t *treeTools) write(ctx context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, any, error) {
	if err := t.writeFile(ctx, treePath(in.Path), []byte(in.Data)); err != nil {
		return nil, nil, err
	}
	return text("written"), nil, nil
}

// writeFile writes data as `ollie write` does: one write, then a sync, so
// a message file (ctl, prompt) given text without a final newline still
// takes it, and its error comes back here.
func (t *treeTools) writeFile(ctx context.Context, p string, data []byte) error {
	f, err := t.fsys.Open(ctx, p, plan9.OWRITE|plan9.OTRUNC)
	if errs.Is(err, errs.NotExist) {
		f, err = t.fsys.Create(ctx, p, 0o644, plan9.OWRITE)
	}
	if err != nil {
		return err
	}
	defer f.Clunk(context.Background())
	if _, err := f.WriteAt(ctx, data, 0); err != nil {
		return err
	}
	return f.Sync(ctx)
}

// treePath cleans a path of the tree: leading slashes are optional and
// ".." never climbs above the root.
func treePath(p string) string {
	var out []string
	for _, e := range strings.Split(p, "/") {
		switch e {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, e)
		}
	}
	return strings.Join(out, "/")
}
