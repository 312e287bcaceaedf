// Package mcpconf is the part of the MCP bridge that does not speak MCP:
// the server lists (mcp.json, t/mcp.d/servers.json), how to reach one
// server (a Target), and the bridge's command line. ollie links it for
// `ollie help mcp` and for the daemon's per-session servers (mcplive);
// only ollie-mcp links the MCP SDK (package mcpbridge), whose packages
// cost every process that links them about a millisecond at start.
package mcpconf
