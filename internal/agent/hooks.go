package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"ollie.dev/ollie/internal/session"
)

// Hooks are shell commands from the agent configuration, run by the
// daemon (not in the sandbox: a/ is the user's, and the model cannot
// write it) with a JSON payload on stdin, in the session's cwd, for at
// most hookTimeout. Exit status 2 blocks what is about to happen; its
// stderr says why. Injection points:
//
//	agentSpawn   first turn of a session    exit 2: the turn fails
//	preTurn      before a turn              exit 2: the turn fails
//	postTurn     after a turn               exit 2: stdout is the next prompt
//	preTool      before a tool call         exit 2: not run; stderr is its result
//	postTool     after a tool call          stdout is appended to the result
//	preCompact   before a compaction        exit 2: no compaction
//	postCompact  after a compaction         (notice only)
//	turnError    after a failed turn        (notice only)
//
// Every run is an event: {"type":"hook","data":{"hook":..,"exit":..,"ms":..}}.
const hookTimeout = 30 * time.Second

// hookResult is what the commands of one hook said.
type hookResult struct {
	blocked bool
	reason  string // stderr of the blocking command
	stdout  string // stdout of the commands that exited 0 (or of the blocking one)
}

func (r *Runner) hook(ctx context.Context, t *session.Turn, st *setup, name string, payload map[string]any) hookResult {
	var res hookResult
	cmds := st.agent.Hooks[name]
	if len(cmds) == 0 {
		return res
	}
	payload["hook"] = name
	payload["session"] = st.meta.ID
	payload["agent"] = st.meta.Agent
	payload["cwd"] = st.meta.Cwd
	in, _ := json.Marshal(payload)
	for _, c := range cmds {
		out, errText, code, ms := runHookCmd(ctx, c, st.meta.Cwd, in, r.hookEnv(st))
		t.Event("hook", map[string]any{"hook": name, "command": c, "exit": code, "ms": ms})
		switch code {
		case 0:
			res.stdout += out
		case 2:
			res.blocked, res.reason, res.stdout = true, strings.TrimSpace(errText), out
			if res.reason == "" {
				res.reason = "blocked by the " + name + " hook"
			}
			t.Chat(":: " + name + " hook blocked: " + res.reason + "\n")
			return res
		default:
			t.Chat(":: " + name + " hook failed (exit " + itoa(code) + "): " + shorten(strings.TrimSpace(errText), 300) + "\n")
		}
	}
	return res
}

// hookEnv is the daemon's environment without secrets (see redact.Env and
// docs/agents.md) plus the session's variables.
func (r *Runner) hookEnv(st *setup) []string {
	env := append(r.o.Redact.Env(os.Environ(), st.agent.PassEnv), "OLLIE_ID="+st.meta.ID)
	if r.o.Mount != "" {
		env = append(env, "OLLIE="+r.o.Mount, "OLLIE_SESSION="+r.o.Mount+"/s/"+st.meta.ID)
	}
	return env
}

func runHookCmd(ctx context.Context, command, cwd string, stdin []byte, env []string) (stdout, stderr string, code int, ms int64) {
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir, cmd.Env = cwd, env
	cmd.Stdin = bytes.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	ms = time.Since(start).Milliseconds()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		code, e = -1, *bytes.NewBufferString(err.Error())
	}
	if ctx.Err() == context.DeadlineExceeded {
		code = -1
		e.WriteString(" (timed out)")
	}
	return o.String(), e.String(), code, ms
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
