package mcpbridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An idx line is one tool in the form of t/idx, so an agent greps a
// server's tools instead of loading their schemas:
//
//	get-sum: Returns the sum of two numbers; args: a:number b:number
//	search_files: Recursively search for files and directories matching a pattern; args: path:string pattern:string [excludePatterns:string[]]
//
// Required arguments come first, in the schema's order; optional ones
// follow in brackets. `mcp schema SERVER TOOL` shows the whole schema.

// maxDesc bounds the description of an idx line.
const maxDesc = 120

// IdxLine renders one tool as an idx line.
func IdxLine(t *mcp.Tool) string {
	line := t.Name + ": " + ShortDescription(t.Description)
	if a := ArgsSummary(t.InputSchema); a != "" {
		line += "; args: " + a
	}
	return line
}

// Idx renders tools as idx lines, sorted by name.
func Idx(tools []*mcp.Tool) []byte {
	lines := make([]string, 0, len(tools))
	for _, t := range tools {
		lines = append(lines, IdxLine(t))
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// ShortDescription is the first sentence of d on one line, at most
// maxDesc bytes.
func ShortDescription(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	if d == "" {
		return "(no description)"
	}
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	if len(d) > maxDesc {
		cut := strings.LastIndex(d[:maxDesc], " ")
		if cut < maxDesc/2 {
			cut = maxDesc
		}
		d = d[:cut] + "..."
	}
	return d
}

type schema struct {
	Type       any                `json:"type"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Items      *schema            `json:"items"`
	Enum       []any              `json:"enum"`
	AnyOf      []*schema          `json:"anyOf"`
	OneOf      []*schema          `json:"oneOf"`
}

// ArgsSummary renders an input schema as "a:number b:string [c:bool]".
func ArgsSummary(inputSchema any) string {
	b, err := json.Marshal(inputSchema)
	if err != nil {
		return ""
	}
	var s schema
	if json.Unmarshal(b, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	req := map[string]bool{}
	var parts []string
	for _, name := range s.Required {
		if p, ok := s.Properties[name]; ok && !req[name] {
			req[name] = true
			parts = append(parts, name+":"+typeName(p))
		}
	}
	var opt []string
	for name := range s.Properties {
		if !req[name] {
			opt = append(opt, name)
		}
	}
	sort.Strings(opt)
	for _, name := range opt {
		parts = append(parts, "["+name+":"+typeName(s.Properties[name])+"]")
	}
	return strings.Join(parts, " ")
}

func typeName(s *schema) string {
	if s == nil {
		return "any"
	}
	if n := len(s.Enum); n > 0 && n <= 6 {
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, fmt.Sprint(v))
		}
		return strings.Join(vs, "|")
	}
	switch t := s.Type.(type) {
	case string:
		if t == "array" {
			return typeName(s.Items) + "[]"
		}
		if t == "integer" {
			return "int"
		}
		if t == "boolean" {
			return "bool"
		}
		return t
	case []any:
		var ts []string
		for _, x := range t {
			if x != "null" {
				ts = append(ts, typeName(&schema{Type: x, Items: s.Items}))
			}
		}
		return strings.Join(ts, "|")
	}
	alts := s.AnyOf
	if len(alts) == 0 {
		alts = s.OneOf
	}
	if len(alts) > 0 {
		var ts []string
		for _, a := range alts {
			// string|string (alternatives that differ only in a format or
			// pattern) reads as string.
			if n := typeName(a); n != "null" && !slices.Contains(ts, n) {
				ts = append(ts, n)
			}
		}
		return strings.Join(ts, "|")
	}
	return "any"
}

// CallText renders a tool's result as text: its text blocks as they are,
// other blocks described in a line, and the structured content as JSON
// when there is no text.
func CallText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(contentText(c))
	}
	if b.Len() == 0 && r.StructuredContent != nil {
		j, _ := json.Marshal(r.StructuredContent)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return withNewline(c.Text)
	case *mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource %s %s]\n", c.URI, c.Name)
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			return resourceText(c.Resource)
		}
	}
	j, _ := json.Marshal(c)
	return string(j) + "\n"
}

func resourceText(rc *mcp.ResourceContents) string {
	if rc.Blob != nil {
		return fmt.Sprintf("[resource %s %s, %d bytes; -json gives it in base64]\n", rc.URI, rc.MIMEType, len(rc.Blob))
	}
	return withNewline(rc.Text)
}

// ReadText renders the contents of a resource: text as it is, binary
// described.
func ReadText(r *mcp.ReadResourceResult) string {
	var b strings.Builder
	for _, c := range r.Contents {
		b.WriteString(resourceText(c))
	}
	return b.String()
}

// ResourcesText renders resources and templates one a line:
// "URI name (mime): description".
func ResourcesText(rs []*mcp.Resource, ts []*mcp.ResourceTemplate) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s %s%s: %s\n", r.URI, r.Name, mimeOf(r.MIMEType), ShortDescription(r.Description))
	}
	for _, t := range ts {
		fmt.Fprintf(&b, "%s %s%s: %s\n", t.URITemplate, t.Name, mimeOf(t.MIMEType), ShortDescription(t.Description))
	}
	return b.String()
}

func mimeOf(m string) string {
	if m == "" {
		return ""
	}
	return " (" + m + ")"
}

// PromptsText renders prompts as idx lines: "name: description; args: a [b]".
func PromptsText(ps []*mcp.Prompt) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Name + ": " + ShortDescription(p.Description))
		var args []string
		for _, a := range p.Arguments {
			if a.Required {
				args = append(args, a.Name)
			} else {
				args = append(args, "["+a.Name+"]")
			}
		}
		if len(args) > 0 {
			b.WriteString("; args: " + strings.Join(args, " "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// PromptText renders a prompt's messages as "role: text" lines.
func PromptText(r *mcp.GetPromptResult) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(string(m.Role) + ": " + contentText(m.Content))
	}
	return b.String()
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
