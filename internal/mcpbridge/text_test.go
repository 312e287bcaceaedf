package mcpbridge_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"ollie.dev/ollie/internal/mcpbridge"
)

func TestIdxLines(t *testing.T) {
	tool := &mcp.Tool{Name: "search", Description: "Search issues and pull requests. Supports qualifiers.\nMore text.",
		InputSchema: map[string]any{"type": "object", "required": []any{"query", "repo"}, "properties": map[string]any{
			"query": map[string]any{"type": "string"},
			"repo":  map[string]any{"type": "string"},
			"limit": map[string]any{"type": "integer"},
			"state": map[string]any{"type": "string", "enum": []any{"open", "closed"}},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"since": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}},
			"draft": map[string]any{"type": []any{"boolean", "null"}},
		}}}
	want := "search: Search issues and pull requests.; args: query:string repo:string [draft:bool] [limit:int] [since:string] [state:open|closed] [tags:string[]]"
	if got := mcpbridge.IdxLine(tool); got != want {
		t.Errorf("idx line\n got %s\nwant %s", got, want)
	}
	long := &mcp.Tool{Name: "x", Description: strings.Repeat("word ", 40), InputSchema: map[string]any{"type": "object"}}
	if got := mcpbridge.IdxLine(long); len(got) > 130 || !strings.HasSuffix(got, "...") || strings.Contains(got, "args:") {
		t.Errorf("a long description, no args: %q", got)
	}
	if got := mcpbridge.IdxLine(&mcp.Tool{Name: "y"}); got != "y: (no description)" {
		t.Errorf("bare tool: %q", got)
	}
}
