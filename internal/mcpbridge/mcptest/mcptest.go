// Package mcptest finds the real MCP servers the tests run: the npm
// packages test.sh installs (@modelcontextprotocol/server-everything and
// server-filesystem, pinned versions) under $OLLIE_TEST_NPM, by default
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
