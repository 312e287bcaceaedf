// Package mcptest finds the real MCP servers the tests run: the npm
// packages test.sh installs (@modelcontextprotocol/server-everything,
// server-filesystem and server-memory, and the tokenizer gpt-tokenizer,
// pinned versions) under $OLLIE_TEST_NPM, by default
// $HOME/.cache/ollie-test/npm.
//
// A test that needs them is skipped when they are missing, unless
// OLLIE_REQUIRE_NPM is set (as CI does): then it fails, so a missing
// server never passes silently there.
package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Versions are the pinned packages, as test.sh installs them.
const (
	Everything = "@modelcontextprotocol/server-everything@2026.8.31"
	Filesystem = "@modelcontextprotocol/server-filesystem@2026.8.31"
)

// Dir is where the packages are installed.
func Dir() string {
	if d := os.Getenv("OLLIE_TEST_NPM"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ollie-test", "npm")
}

// Node is the node executable.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not installed")
	}
	return p
}

func script(t testing.TB, pkg string) string {
	t.Helper()
	p := filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		missing(t, pkg+" is not installed in "+Dir()+" (test.sh installs it)")
	}
	return p
}

// EverythingCmd is the command line of server-everything over stdio.
func EverythingCmd(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), script(t, "server-everything"), "stdio"}
}

// EverythingHTTP is the command line of server-everything serving
// streamable HTTP (at /mcp, on $PORT).
func EverythingHTTP(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), script(t, "server-everything"), "streamableHttp"}
}

// FilesystemCmd is the command line of server-filesystem allowed dirs.
func FilesystemCmd(t testing.TB, dirs ...string) []string {
	t.Helper()
	return append([]string{Node(t), script(t, "server-filesystem")}, dirs...)
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("OLLIE_REQUIRE_NPM") != "" {
		t.Fatalf("%s, but OLLIE_REQUIRE_NPM is set", why)
	}
	t.Skip(why)
}

// More pinned packages test.sh installs: a stateful server, and the BPE
// tokenizer the token-economy test counts with (o200k_base, cl100k_base).
const (
	Memory    = "@modelcontextprotocol/server-memory@2026.8.31"
	Tokenizer = "gpt-tokenizer@4.0.0"
)

// MemoryCmd is the command line of server-memory over stdio; it keeps its
// knowledge graph in memory and in $MEMORY_FILE_PATH.
func MemoryCmd(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), script(t, "server-memory")}
}

// Tokens counts the tokens of text in encoding (o200k_base or
// cl100k_base) with the real tokenizer.
func Tokens(t testing.TB, encoding, text string) int {
	t.Helper()
	mod := filepath.Join(Dir(), "node_modules", "gpt-tokenizer")
	if _, err := os.Stat(filepath.Join(mod, "package.json")); err != nil {
		missing(t, "gpt-tokenizer is not installed in "+Dir()+" (test.sh installs it)")
	}
	cmd := exec.Command(Node(t), "-e", `const enc = require("gpt-tokenizer/encoding/" + process.argv[1]);
let s = ""; process.stdin.on("data", d => s += d).on("end", () => console.log(enc.countTokens(s)));`, encoding)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(Dir(), "node_modules"))
	cmd.Stdin = strings.NewReader(text)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tokenizer %s: %v", encoding, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("tokenizer %s printed %q", encoding, out)
	}
	return n
}
