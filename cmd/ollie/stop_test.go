package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ollie.dev/ollie/internal/fusebridge"
	"ollie.dev/ollie/internal/llmtest"
)

// TestStopAfterProtectedStage: a stage in a git repository runs in a
// mount namespace that keeps .git read-only, and the sandbox keeps such a
// namespace for the next stage. It is a copy of the host's mounts, the
// tree's FUSE mount among them, and a FUSE mount is not gone until every
// copy is: `ollie stop` must still stop the daemon (not kill it after its
// 10 seconds) and leave nothing mounted.
func TestStopAfterProtectedStage(t *testing.T) {
	t.Parallel() // a daemon, a mount and a model of its own
	e := newFrontEnv(t, &llmtest.Script{
		Rules: []llmtest.Rule{{If: `^run a stage`, Then: llmtest.Turn{Calls: []llmtest.Call{
			llmtest.ExecuteCode("sh", "echo staged; test -w .git || echo git-protected")}}}},
		Default: &llmtest.Turn{Text: "done"},
	})
	e.ok("sh", `git init -q . && echo "cwd=$PWD name=g" >s/new && echo 'run a stage' >s/g/prompt && cat s/g/wait`)
	if chat := e.read("s/g/chat"); !strings.Contains(chat, "staged") || !strings.Contains(chat, "git-protected") {
		t.Fatalf("the stage did not run protected:\n%s", chat)
	}
	out, errs, code := e.run("sh", "ollie stop", "")
	if code != 0 || !strings.Contains(out, "ollie stopped") {
		log, _ := os.ReadFile(filepath.Join(e.root, "daemon.log"))
		t.Fatalf("ollie stop: exit %d\nstdout: %s\nstderr: %s\ndaemon log:\n%s", code, out, errs, log)
	}
	// The unmount did not wait out its bound for a copy of the mount,
	// as it would until the sandbox dropped its kept namespace.
	if log, _ := os.ReadFile(filepath.Join(e.root, "daemon.log")); strings.Contains(string(log), "copies of it in other mount namespaces") {
		t.Errorf("the daemon's unmount waited for a copy of the mount:\n%s", log)
	}
	if fusebridge.IsMountPoint(e.mnt) {
		t.Errorf("%s is still mounted after ollie stop", e.mnt)
	}
}
