// Package tools tests the tools ollie ships in defaults/t and teaches in
// defaults/sk: every test runs a tool through execute_code in the real
// sandbox, as a model calls it, and the tools that use the tree ($OLLIE)
// run against a real daemon mounted through FUSE. See docs/tools.md.
package tools
