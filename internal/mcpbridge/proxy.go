package mcpbridge

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A proxy serves one upstream server again, over streamable HTTP. Its
// point is the sandbox: a server whose environment holds a key runs
// outside, started by the user with that key, and a stage reaches it by
// URL. The model can use the server; it cannot read the key.

// NewProxy returns a server that forwards to c: its tools, resources,
// resource templates and prompts as c lists them now, each request
// passed on as it came and each answer, errors included, passed back.
func NewProxy(ctx context.Context, c *Conn) (*mcp.Server, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "ollie-proxy", Version: Version},
		&mcp.ServerOptions{Instructions: c.Instructions()})
	tools, err := c.Tools(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		name := t.Name
		s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments})
			return res, wire(err)
		})
	}
	rs, ts, err := c.Resources(ctx)
	if err != nil {
		return nil, err
	}
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		res, err := c.cs.ReadResource(ctx, req.Params)
		return res, wire(err)
	}
	for _, r := range rs {
		s.AddResource(r, read)
	}
	for _, t := range ts {
		s.AddResourceTemplate(t, read)
	}
	ps, err := c.Prompts(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		s.AddPrompt(p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			res, err := c.cs.GetPrompt(ctx, req.Params)
			return res, wire(err)
		})
	}
	return s, nil
}

// wire passes the upstream's JSON-RPC error on unchanged.
func wire(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we
	}
	return err
}

// HTTPHandler serves s over streamable HTTP; every client session talks
// to the same s.
func HTTPHandler(s *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}
