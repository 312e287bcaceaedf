// Package mcpbridge is ollie's MCP interop on the official Go SDK, kept
// out of the core: the agent loop has one tool, execute_code, and
// reaches MCP servers through a tool script (t/mcp) that runs the bridge,
// ollie-mcp (`ollie mcp`), whose command line is package mcpcli. Only
// ollie-mcp links this package and the SDK; the server lists and Target
// are mcpconf's, which ollie reads without them.
//
// The client side, for ollie-mcp and t/mcp:
//
//	all, _ := mcpconf.LoadServers(private, public) // mcpServers lists
//	c, err := mcpbridge.Dial(ctx, all["fs"].Target("fs", os.Getenv))
//	defer c.Close()
//	tools, _ := c.Tools(ctx)
//	os.Stdout.Write(mcpbridge.Idx(tools)) // one grep-able line per tool
//	res, err := c.Call(ctx, "read_text_file", json.RawMessage(`{"path": "/srv/a"}`))
//	fmt.Print(mcpbridge.CallText(res)) // err has the server's message
//
// NewProxy and HTTPHandler serve one server again over streamable HTTP,
// so a server that needs a key runs outside the sandbox and stages reach
// it by URL. NewOllieServer is the other direction: ollie as an MCP
// server whose tools are file operations on the tree over 9P (`ollie mcp
// serve`). docs/mcp.md has the whole story.
package mcpbridge
